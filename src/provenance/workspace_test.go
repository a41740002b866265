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

// review show of a workspace file reads what is in effect from the
// workspace, not from the instance at the same relative path: an
// instance file there is no conflict.
func TestShowWorkspaceChange(t *testing.T) {
	f := newFixture(t)
	f.write("CLAUDE.md", "the instance's own file\n")
	ws, ids := heldWorkspace(t, f, "ws", "CLAUDE.md")
	c, err := f.s.Change(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if c.Conflict || c.InEffect || c.EffectText != "" {
		t.Errorf("in effect: %q (exists %v), conflict %v; want none", c.EffectText, c.InEffect, c.Conflict)
	}
	if err := os.WriteFile(filepath.Join(ws, "CLAUDE.md"), []byte("the owner's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = f.s.Change(ids[0]); err != nil || !c.Conflict || c.EffectText != "the owner's\n" {
		t.Errorf("after the owner wrote it: %q conflict %v (%v)", c.EffectText, c.Conflict, err)
	}
}
