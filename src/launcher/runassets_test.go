package launcher

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hobbs-agent/hobbs/src/playbook"
)

// A run's approved skills and sub-agents are written where hobbs-init.sh
// links them from (skills/NAME/…, agents/NAME.md), both directories made
// even when the playbook names none.
func TestWriteRunAssets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "assets")
	err := writeRunAssets(dir, []playbook.AssetFile{
		{Kind: "skill", Name: "bank-export", Path: "skills/bank-export/SKILL.md", Data: []byte("approved skill\n")},
		{Kind: "skill", Name: "bank-export", Path: "skills/bank-export/scripts/fetch.sh", Data: []byte("echo approved\n"), Exec: true},
		{Kind: "agent", Name: "ledger", Path: "agents/custom/ledger.md", Data: []byte("approved agent\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"skills/bank-export/SKILL.md": "approved skill\n",
		"skills/bank-export/scripts/fetch.sh": "echo approved\n", "agents/ledger.md": "approved agent\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", rel, b, err)
		}
	}
	// A script the skill runs keeps its owner's execute bit; the rest is
	// the owner's to read only.
	for rel, want := range map[string]os.FileMode{"skills/bank-export/scripts/fetch.sh": 0o700, "skills/bank-export/SKILL.md": 0o600} {
		if fi, err := os.Stat(filepath.Join(dir, rel)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", rel, fi.Mode().Perm(), err, want)
		}
	}
	empty := filepath.Join(t.TempDir(), "assets")
	if err := writeRunAssets(empty, nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"skills", "agents"} {
		if fi, err := os.Stat(filepath.Join(empty, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s not made: %v", d, err)
		}
	}
	// A file that is not its asset's is refused, nothing written outside.
	for _, f := range []playbook.AssetFile{
		{Kind: "skill", Name: "x", Path: "skills/y/SKILL.md"},
		{Kind: "skill", Name: "x", Path: "skills/x/../../evil"},
		{Kind: "agent", Name: "x", Path: "agents/custom/y.md"},
		{Kind: "skill", Name: "..", Path: "skills/../SKILL.md"},
	} {
		if err := writeRunAssets(filepath.Join(t.TempDir(), "assets"), []playbook.AssetFile{f}); err == nil {
			t.Errorf("%+v was written", f)
		}
	}
}
