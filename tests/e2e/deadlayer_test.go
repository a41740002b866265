package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDeadLauncherLayerHeld: a session whose launcher is killed (SIGKILL)
// after its agent wrote a memory leaves its layer; the next session's
// start holds that change set whole for review (what the dead session read
// is not known), tells the owner, and removes the layer and its volumes.
// Nothing of it takes effect, nothing of it is lost.
func TestDeadLauncherLayerHeld(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	name := killedAfterMemory(t, e, "dead")
	left := filepath.Join(e.inst, "layers", name)
	if !exists(left) {
		t.Fatalf("the killed session left no layer in %s", left)
	}
	r := e.hobbs(nil, e.runArgs(sessionName(t, "next"), "true")...)
	if r.code != 0 {
		t.Fatalf("the next session: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, "hobbs review") {
		t.Errorf("the next session's start does not tell of the dead session's held changes:\n%s", r.stderr)
	}
	if l := e.hobbs(nil, "memory", "list"); strings.Contains(l.stdout, "launcher died") {
		t.Errorf("the dead session's memory is in effect:\n%s", l.stdout)
	}
	rv := e.hobbs(nil, "review", "--json")
	if !strings.Contains(rv.stdout, "memory/active/") || !strings.Contains(rv.stdout, name) {
		t.Errorf("the dead session's memory is not held for review:\n%s", rv.stdout)
	}
	if exists(left) {
		ents, _ := os.ReadDir(left)
		t.Errorf("the dead session's layer is still in %s: %v", left, ents)
	}
	for _, l := range e.leftovers(t) {
		if strings.Contains(l, name) {
			t.Errorf("left of the dead session: %v", e.leftovers(t))
			break
		}
	}
	// Approving it puts the memory in effect: held, not lost.
	id := heldID(t, rv.stdout, "memory/active/")
	if a := e.hobbs(nil, "review", "approve", id); a.code != 0 {
		t.Fatalf("approve %s: exit %d %s", id, a.code, a.stderr)
	}
	if l := e.hobbs(nil, "memory", "list"); !strings.Contains(l.stdout, "launcher died") {
		t.Errorf("the approved memory is not in effect:\n%s", l.stdout)
	}
}

// heldID is the id of the one held change whose path starts with prefix in
// review --json's output.
func heldID(t *testing.T, out, prefix string) string {
	t.Helper()
	var items []struct{ ID, Path string }
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("review --json: %v\n%s", err, out)
	}
	for _, it := range items {
		if strings.HasPrefix(it.Path, prefix) {
			return it.ID
		}
	}
	t.Fatalf("nothing under %s held:\n%s", prefix, out)
	return ""
}

// TestDeadLauncherLayerNameReused: a session started under the name of one
// whose launcher was killed (and whose leftovers hobbs stop --all removed)
// does not take that session's layer for its
// own (its untainted end would merge what the dead session wrote): the
// left layer is held whole, the new session's own changes merge.
func TestDeadLauncherLayerNameReused(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	name := killedAfterMemory(t, e, "again")
	// Its containers and note removed, the name is free again.
	if r := e.hobbs(nil, "stop", "--all"); r.code != 0 {
		t.Fatalf("stop --all: exit %d\n%s", r.code, r.stderr)
	}
	r := e.hobbs(nil, e.runArgs(name, "hobbs", "memory", "add", "Fact from the session that took the name.")...)
	if r.code != 0 {
		t.Fatalf("the session of the same name: exit %d\n%s", r.code, r.stderr)
	}
	l := e.hobbs(nil, "memory", "list")
	if strings.Contains(l.stdout, "launcher died") {
		t.Errorf("the dead session's memory is in effect:\n%s\n%s", l.stdout, r.stderr)
	}
	if !strings.Contains(l.stdout, "took the name") {
		t.Errorf("the new session's own memory is not in effect:\n%s\n%s", l.stdout, r.stderr)
	}
	// Held at this start or the next one.
	if r := e.hobbs(nil, e.runArgs(sessionName(t, "next"), "true")...); r.code != 0 {
		t.Fatalf("the next session: exit %d\n%s", r.code, r.stderr)
	}
	rv := e.hobbs(nil, "review", "--json")
	if !strings.Contains(rv.stdout, "memory/active/") {
		t.Errorf("the dead session's memory is not held for review:\n%s", rv.stdout)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.inst, "layers")); len(ents) > 0 {
		for _, d := range ents {
			if !strings.HasPrefix(d.Name(), ".") {
				t.Errorf("a layer is left in %s: %s", filepath.Join(e.inst, "layers"), d.Name())
			}
		}
	}
}

// killedAfterMemory starts a session (tag) whose agent adds a memory, kills
// its launcher (SIGKILL) once it has, and returns the session's name.
func killedAfterMemory(t *testing.T, e *env, tag string) string {
	t.Helper()
	name := sessionName(t, tag)
	c := e.command(nil, e.runArgs(name, "sh", "-c",
		"hobbs memory add 'Fact from a session whose launcher died.' && touch /home/dev/hobbs/workspace/.started; sleep 120")...)
	e.start(t, c)
	waitFor(t, 60*time.Second, "the session to write its memory", func() bool { return exists(filepath.Join(e.ws, ".started")) })
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	return name
}

// TestKeptLayerHeld: a session's end that cannot merge a layer (here: the
// playbooks' lock cannot be taken) keeps it, says where, and the next
// session's start holds it whole for review and removes it.
func TestKeptLayerHeld(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	lock := filepath.Join(e.inst, "playbooks", ".lock")
	os.Remove(lock)
	if err := os.MkdirAll(lock, 0o755); err != nil { // a lock that cannot be taken
		t.Fatal(err)
	}
	name := sessionName(t, "kept")
	r := e.hobbs(nil, e.runArgs(name, "sh", "-c", "printf '# Kept\\n' > ~/.hobbs/playbooks/kept.md")...)
	layer := filepath.Join(e.inst, "layers", name)
	if r.code != 0 || !strings.Contains(r.stderr, "they stay in layers/"+name+"/playbooks") {
		t.Fatalf("session: exit %d\n%s", r.code, r.stderr)
	}
	if !exists(filepath.Join(layer, "playbooks", "upper", "kept.md")) || exists(filepath.Join(e.inst, "playbooks", "kept.md")) {
		t.Fatal("the layer whose merge failed was not kept, or was merged")
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	n := e.hobbs(nil, e.runArgs(sessionName(t, "next"), "true")...)
	if n.code != 0 || !strings.Contains(n.stderr, name+" (its end could not merge them)") {
		t.Fatalf("the next session: exit %d\n%s", n.code, n.stderr)
	}
	heldID(t, e.hobbs(nil, "review", "--json").stdout, "playbooks/kept.md")
	if exists(layer) {
		t.Errorf("the kept layer is still in %s", layer)
	}
}
