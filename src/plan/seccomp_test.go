package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dist/seccomp.json is the profile the compose file and the devcontainer
// pass; it must be the one hobbs run passes. Regenerate it with
// HOBBS_WRITE_SECCOMP=1 go test ./src/plan -run TestSeccompFileIsCurrent.
func TestSeccompFileIsCurrent(t *testing.T) {
	p := filepath.Join("..", "..", "dist", "seccomp.json")
	if os.Getenv("HOBBS_WRITE_SECCOMP") == "1" {
		if err := os.WriteFile(p, SeccompProfile(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(SeccompProfile()) {
		t.Errorf("dist/seccomp.json differs from SeccompProfile(); regenerate it (see this test's comment)")
	}
	for _, want := range []string{`"chmod"`, `"SCMP_CMP_MASKED_EQ"`, `"value": 3072`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("profile lacks %s", want)
		}
	}
}
