package provenance

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// heldWorkspace ends a tainted layered session that created the
// instruction files paths of a new workspace, held for review, and
// returns the workspace and the items' ids.
func heldWorkspace(t *testing.T, f *fixture, name string, paths ...string) (string, []string) {
	t.Helper()
	ws := t.TempDir()
	if err := f.s.BeginLayer(name, Origin{Kind: OriginTrigger}, "", 0, nil); err != nil {
		t.Fatal(err)
	}
	var hold []LayerChange
	for i, p := range paths {
		from := fmt.Sprintf("layers/%s/workspace/upper/%d", name, i)
		f.write(from, "text of "+p+"\n")
		hold = append(hold, LayerChange{Path: p, From: from, Workspace: ws})
	}
	r, err := f.s.EndLayer(name, nil, nil, func(bool, string) ([]string, []LayerChange, []string) { return nil, hold, nil })
	if err != nil || len(r.Held) != len(paths) {
		t.Fatalf("held %+v: %v (%q)", r.Held, err, r.Problems)
	}
	var ids []string
	for _, it := range r.Held {
		ids = append(ids, it.ID)
	}
	return ws, ids
}

// Approving workspace files is all or none: when one cannot be written
// (here: its directory is the file approved before it), the one already
// written is put back, and both still wait.
func TestApproveWorkspaceAllOrNone(t *testing.T) {
	f := newFixture(t)
	ws, ids := heldWorkspace(t, f, "ws", ".claude/x", ".claude/x/y")
	if err := f.s.Approve(ids); err == nil {
		t.Fatal("approved a file under a file")
	}
	if _, err := os.Lstat(filepath.Join(ws, ".claude", "x")); !os.IsNotExist(err) {
		t.Errorf("the workspace file written first stayed: %v", err)
	}
	items, err := f.s.List(false)
	if err != nil || len(items) != 2 {
		t.Fatalf("waiting: %+v %v", items, err)
	}
	if err := f.s.Approve(ids[:1]); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".claude", "x")); string(b) != "text of .claude/x\n" {
		t.Errorf("approved alone: %q %v", b, err)
	}
}
