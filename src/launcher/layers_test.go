package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/provenance"
)

// layeredSession is an untainted session with overlay layers made over an
// instance whose memory holds m1; its upper directories are written by
// hand, as overlayfs would.
func layeredSession(t *testing.T, name string) (*Session, instance.Instance) {
	t.Helper()
	in, _ := instance.At(t.TempDir())
	active := filepath.Join(in.Root, "memory", "active")
	os.MkdirAll(active, 0o755)
	os.WriteFile(filepath.Join(active, "m1.md"), benchMemory("m1", 0, "Likes tea."), 0o644)
	return layeredSessionIn(t, in, name), in
}

// layeredSessionIn is an untainted session named name with layers made
// over in.
func layeredSessionIn(t *testing.T, in instance.Instance, name string) *Session {
	t.Helper()
	h, err := plan.Survey(in, config.Default(), false, t.TempDir(), os.Getuid(), os.Getgid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.RunVolume = name + "-run"
	p, err := plan.New(config.Default(), plan.RunSpec{Kind: plan.KindSession, Name: name, Image: "hobbs:local", Host: h})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Instance: in, Name: name, plan: p, Progress: func(string, ...any) {}, owner: Owner(),
		Provenance: provenance.New(in.FS(), nil)}
	if err := s.makeLayers(); err != nil {
		t.Fatal(err)
	}
	if err := s.Provenance.BeginLayer(name, provenance.Origin{Kind: provenance.OriginTerminal}, s.owner, 0, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// The same memory's text changed differently by the session and, while it
// ran, in effect: what is in effect stays, the session's version waits for
// review; the session's other change merges.
func TestLayerConflictHeld(t *testing.T) {
	s, in := layeredSession(t, "conflict")
	active := filepath.Join(in.Root, "memory", "active")
	up := filepath.Join(in.Root, plan.LayerDir(s.Name, "memory"), "upper", "active")
	os.MkdirAll(up, 0o755)
	os.WriteFile(filepath.Join(up, "m1.md"), benchMemory("m1", 0, "Likes black tea."), 0o644)
	os.WriteFile(filepath.Join(up, "m2.md"), benchMemory("m2", 0, "Drives a Volvo."), 0o644)
	os.WriteFile(filepath.Join(active, "m1.md"), benchMemory("m1", 0, "Likes green tea."), 0o644)
	s.endLayers()
	if b, _ := os.ReadFile(filepath.Join(active, "m1.md")); !strings.Contains(string(b), "green tea") {
		t.Errorf("what is in effect changed: %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(active, "m2.md")); !strings.Contains(string(b), "Volvo") ||
		!strings.Contains(string(b), "provenance: session conflict") {
		t.Errorf("the session's new memory was not merged, stamped: %s", b)
	}
	items, err := s.Provenance.List(false)
	if err != nil || len(items) != 1 || items[0].Path != "memory/active/m1.md" || items[0].Change != "changed" {
		t.Fatalf("held: %+v %v", items, err)
	}
	before, after, err := s.Provenance.Content(items[0].ID)
	if err != nil || !strings.Contains(string(before), "green tea") || !strings.Contains(string(after), "black tea") {
		t.Errorf("review shows %q -> %q (%v)", before, after, err)
	}
	if _, err := os.Stat(filepath.Join(in.Root, "layers", s.Name)); !os.IsNotExist(err) {
		t.Errorf("the layer was not removed: %v", err)
	}
	// Approving it puts the session's version in effect.
	if err := s.Provenance.Approve([]string{items[0].ID}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(active, "m1.md")); !strings.Contains(string(b), "black tea") {
		t.Errorf("the approved version is not in effect: %s", b)
	}
}

// A layer's link is never followed nor taken; a .git in it goes to the
// quarantine before the merge (execute.go's neutralise), else the merge
// leaves it out.
func TestLayerLeavesOutLinksAndHostTrusted(t *testing.T) {
	s, in := layeredSession(t, "odd")
	up := filepath.Join(in.Root, plan.LayerDir(s.Name, "memory"), "upper", "active")
	os.MkdirAll(filepath.Join(up, ".git"), 0o755)
	os.WriteFile(filepath.Join(up, ".git", "config"), []byte("[core]\n"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(up, "evil.md"))
	var said []string
	s.Progress = func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	s.endLayers()
	for _, p := range []string{"evil.md", ".git"} {
		if _, err := os.Lstat(filepath.Join(in.Root, "memory", "active", p)); err == nil {
			t.Errorf("%s was taken from the layer", p)
		}
	}
	if !strings.Contains(strings.Join(said, "\n"), "not taken from the session") {
		t.Errorf("the end did not report what it left out: %q", said)
	}
}

// A layer whose merge fails (here: the memory's lock cannot be taken) is
// kept where it is, marked, and the owner told so; the next start holds it
// whole for review and removes it.
func TestLayerKeptWhenMergeFails(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	s, in := layeredSession(t, "failed")
	up := filepath.Join(in.Root, plan.LayerDir(s.Name, "memory"), "upper", "active")
	os.MkdirAll(up, 0o755)
	os.WriteFile(filepath.Join(up, "m2.md"), benchMemory("m2", 0, "Drives a Volvo."), 0o644)
	lock := filepath.Join(in.Root, "memory", ".lock")
	if err := os.Mkdir(lock, 0o755); err != nil { // a lock that cannot be taken
		t.Fatal(err)
	}
	var said []string
	s.Progress = func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	s.endLayers()
	if _, err := os.Stat(filepath.Join(up, "m2.md")); err != nil {
		t.Fatalf("the layer whose merge failed was removed: %v (said %q)", err, said)
	}
	if _, err := os.Stat(filepath.Join(in.Root, "layers", s.Name, keptMark)); err != nil {
		t.Errorf("the kept layer is not marked: %v", err)
	}
	if !strings.Contains(strings.Join(said, "\n"), "they stay in "+plan.LayerDir(s.Name, "memory")) {
		t.Errorf("the end did not say where the changes are: %q", said)
	}
	if _, err := os.Stat(filepath.Join(in.Root, "memory", "active", "m2.md")); err == nil {
		t.Error("the memory was merged")
	}
	os.Remove(lock)
	next := layeredSessionIn(t, in, "next")
	if got := next.leftLayers(); len(got) != 1 || got[0] != s.Name {
		t.Fatalf("left: %v", got)
	}
	next.holdLeft(s.Name, s.Name)
	items, err := next.Provenance.List(false)
	if err != nil || len(items) != 1 || items[0].Path != "memory/active/m2.md" ||
		!strings.Contains(strings.Join(items[0].Sessions[0].Why, ";"), provenance.KeptWhy) {
		t.Fatalf("held: %+v %v", items, err)
	}
	if _, err := os.Stat(filepath.Join(in.Root, "layers", s.Name)); !os.IsNotExist(err) {
		t.Errorf("the held layer was not removed: %v", err)
	}
}

// A playbook's merge takes the playbooks' lock, as every writer of the
// share does: while a host command holds it the merge waits, and what the
// command wrote meanwhile merges with the session's change rather than
// being overwritten.
func TestLayerMergeTakesShareLock(t *testing.T) {
	in, _ := instance.At(t.TempDir())
	books := filepath.Join(in.Root, "playbooks")
	os.MkdirAll(books, 0o755)
	os.WriteFile(filepath.Join(books, "weekly.md"), []byte("# Weekly\n\nstep one\n\nstep two\n"), 0o644)
	s := layeredSessionIn(t, in, "books")
	up := filepath.Join(in.Root, plan.LayerDir(s.Name, "playbooks"), "upper")
	os.MkdirAll(up, 0o755)
	os.WriteFile(filepath.Join(up, "weekly.md"), []byte("# Weekly, the session's\n\nstep one\n\nstep two\n"), 0o644)
	unlock, err := in.FS().Lock(in.Lock("playbooks"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.endLayers() }()
	time.Sleep(300 * time.Millisecond)
	if b, _ := os.ReadFile(filepath.Join(books, "weekly.md")); string(b) != "# Weekly\n\nstep one\n\nstep two\n" {
		unlock()
		<-done
		t.Fatalf("the merge wrote the playbook while its lock was held: %q", b)
	}
	// The host's write, under the lock.
	if err := in.FS().Write("playbooks/weekly.md", []byte("# Weekly\n\nstep one\n\nstep two, the owner's\n"), 0o644); err != nil {
		t.Error(err)
	}
	unlock()
	<-done
	if b, _ := os.ReadFile(filepath.Join(books, "weekly.md")); string(b) != "# Weekly, the session's\n\nstep one\n\nstep two, the owner's\n" {
		t.Errorf("in effect: %q, want both changes", b)
	}
}

// A change that could not be held keeps the layer it is in, and the
// layer directory; a workspace's or the user scope's keeps the directory
// alone (its copy is there).
func TestKeepUnheld(t *testing.T) {
	ls := []*layer.Layer{{Share: "memory", Dir: "layers/s/memory"}, {Share: "logs/tasks", Dir: "layers/s/logs-tasks"}}
	k := keep{}
	k.unheld(ls, []provenance.LayerChange{{Path: "logs/tasks/2026.jsonl"}, {Path: "memory", Workspace: "/w"}})
	if len(k) != 2 || !k[""] || !k["layers/s/logs-tasks"] {
		t.Errorf("kept: %v", k)
	}
	k = keep{}
	k.unheld(ls, []provenance.LayerChange{{Path: "CLAUDE.md", Volume: "v"}})
	if len(k) != 1 || !k[""] {
		t.Errorf("kept: %v", k)
	}
}
