package userscope

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stateDir makes a state directory with every kind of entry an agent can
// leave in its volume.
func stateDir(t *testing.T) (parent, dir string) {
	t.Helper()
	parent = t.TempDir()
	dir = filepath.Join(parent, "state")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{dir, outside, dir + "/skills/x", dir + "/projects/-w", dir + "/cache", dir + "/commands"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"CLAUDE.md":              "be kind\n",
		"settings.json":          `{"permissions":{"allow":["Bash(*)"]}}`,
		"skills/x/SKILL.md":      "---\nname: x\n---\n",
		"projects/-w/a.jsonl":    `{"type":"user"}` + "\n",
		"cache/blob":             strings.Repeat("c", 5000),
		"skills/x/huge.md":       strings.Repeat("h", 3000),
		"../outside/secret.md":   "not the volume's\n",
		"commands/do.md":         "do it\n",
		"projects/-w/b.jsonl.gz": "not a transcript",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "skills/x/run.sh"), []byte("#!/bin/sh\n"), 0o700))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "skills/evil.md")))
	must(os.Symlink(outside, filepath.Join(dir, "agents")))
	must(syscall.Mkfifo(filepath.Join(dir, "commands/fifo.md"), 0o600))
	must(os.Link(filepath.Join(dir, "CLAUDE.md"), filepath.Join(dir, "rules")))
	l, err := net.Listen("unix", filepath.Join(dir, "skills/sock"))
	must(err)
	t.Cleanup(func() { l.Close() })
	return parent, dir
}

// List gives what Read gives for the tar stream of the same directory
// (GNU tar standing for the engine's cp): links, FIFOs, hard links and
// files over the caps alike, and nothing from outside it.
func TestListMatchesTheEnginesStream(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Fatal("tar is needed to compare with")
	}
	parent, dir := stateDir(t)
	lim := DefaultLimits
	lim.File = 2000
	var stream bytes.Buffer
	cmd := exec.Command("tar", "-C", parent, "--sort=name", "-cf", "-", "state")
	cmd.Stdout = &stream
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tar: %v\n%s", err, stderr.String())
	}
	want, err := Read(&stream, "state", lim, InScope)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var got *Listing
	go func() {
		defer close(done)
		got, err = List(dir, "state", lim, InScope)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("List blocked (on the FIFO?)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Paths(), want.Paths()) {
		t.Fatalf("paths:\n got %q\nwant %q", got.Paths(), want.Paths())
	}
	for _, p := range want.Paths() {
		if g, w := got.Entries[p], want.Entries[p]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", p, g, w)
		}
	}
	for p, kind := range map[string]Kind{"skills/evil.md": Link, "agents": Link, "commands/fifo.md": Odd, "rules": Odd, "skills/x/huge.md": Odd, "skills/x/run.sh": File} {
		if e := got.Entries[p]; e == nil || e.Kind != kind {
			t.Errorf("%s = %+v, want kind %d", p, e, kind)
		}
	}
	if got.Entries["skills/x/run.sh"] != nil && !got.Entries["skills/x/run.sh"].Exec {
		t.Error("run.sh lost its execute bit")
	}
	if got.Entries["projects/-w/a.jsonl"].Hash == "" || got.Entries["cache/blob"].Data != nil || got.Entries["cache/blob"].Size != 5000 {
		t.Errorf("a transcript is hashed and a cache listed by size: %+v %+v", got.Entries["projects/-w/a.jsonl"], got.Entries["cache/blob"])
	}
	for p := range got.Entries {
		if strings.Contains(p, "secret") || strings.HasPrefix(p, "agents/") {
			t.Errorf("%s: listed through a link", p)
		}
	}
}

// The caps hold as Read's do: a directory of more names than the cap is
// refused, not held in memory.
func TestListCapsEntries(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strings.Repeat("x", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lim := DefaultLimits
	lim.Entries = 20
	if _, err := List(dir, "state", lim, InScope); err != ErrTooMany {
		t.Fatalf("List = %v, want ErrTooMany", err)
	}
}

// ListTo writes the listing whole for its session; LoadListed takes it
// back only for that session.
func TestListToRoundTrips(t *testing.T) {
	_, dir := stateDir(t)
	out := filepath.Join(t.TempDir(), "listing.json")
	if err := ListTo(dir, ".claude", out, "s1"); err != nil {
		t.Fatal(err)
	}
	want, err := List(dir, ".claude", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := LoadListed(f, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadListed(f, "s2"); err == nil {
		t.Error("another session's listing was taken")
	}
	for _, bad := range []string{`{"Format":1,"Session":"s1","Listing":{"Entries":{"../x":{"Path":"../x"}}}}`,
		`{"Format":1,"Session":"s1","Listing":{"Entries":{"a":{"Path":"b"}}}}`,
		`{"Format":2,"Session":"s1","Listing":{"Entries":{}}}`} {
		if _, err := LoadListed(strings.NewReader(bad), "s1"); err == nil {
			t.Errorf("%s was taken", bad)
		}
	}
}
