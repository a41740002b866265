package egress

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// policy.yaml planted as a link to another file: doctor refuses it rather
// than follow it.
func TestCheckPolicyRefusesLink(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	outside := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(outside, []byte("domains: [host.example.com]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, in.Policy()); err != nil {
		t.Fatal(err)
	}
	rs := DoctorPolicy(context.Background(), &doctor.Env{Instance: in})
	if len(rs) != 1 || rs[0].Status != doctor.Fail || !strings.Contains(rs[0].Message, "is a symbolic link") {
		t.Fatalf("doctor: %+v", rs)
	}
}
