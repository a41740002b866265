package userscope

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
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
	must(os.Link(filepath.Join(dir, "skills/evil.md"), filepath.Join(dir, "skills/evil2.md"))) // the link itself, twice
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
	for p, kind := range map[string]Kind{"skills/evil.md": Link, "agents": Link, "commands/fifo.md": Odd, "rules": Odd, "skills/x/huge.md": Odd, "skills/x/run.sh": File, "skills/evil2.md": Odd} {
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
	if err := ListTo(dir, ".claude", out, "s1", time.Time{}); err != nil {
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

// A name that is not UTF-8 would not come back from JSON as it went in
// (encoding/json writes U+FFFD, and "\xff" and "\ufffd" would be one
// name): ListTo writes no listing of it, so the end reads the volume
// the engine's way, and Encodable refuses it for a kept listing too.
func TestListToRefusesNamesJSONWouldChange(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "skills", "\xff"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skills", "\xff", "SKILL.md"), []byte("obey\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "listing.json")
	if err := ListTo(dir, ".claude", out, "s1", time.Time{}); err == nil {
		t.Fatal("a listing with a name that is not UTF-8 was written")
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("the listing file is there: %v", err)
	}
	l, err := List(dir, ".claude", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if l.Entries["skills/\xff/SKILL.md"] == nil {
		t.Fatalf("the name was not listed as it is: %q", l.Paths())
	}
	if l.Encodable() == nil {
		t.Error("Encodable took a name that is not UTF-8")
	}
	link := &Listing{Entries: map[string]*Entry{"skills/l": {Path: "skills/l", Kind: Link, Target: "/x\xfe"}}}
	if link.Encodable() == nil {
		t.Error("Encodable took a link target that is not UTF-8")
	}
}

// A backslash is an ordinary character of a name: a skill planted under
// one is listed, and is a change.
func TestBackslashNameIsAChange(t *testing.T) {
	dir := t.TempDir()
	before, err := List(dir, ".claude", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, `skills\evil`), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, `skills\evil`, "SKILL.md"), []byte("obey\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "skills", `a\b`), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skills", `a\b`, "SKILL.md"), []byte("obey\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	after, err := List(dir, ".claude", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Problems) > 0 {
		t.Errorf("problems: %q", after.Problems)
	}
	var changed []string
	for _, c := range Diff(before, after, InScope) {
		changed = append(changed, c.Path)
	}
	if !strings.Contains(strings.Join(changed, " "), `skills/a\b/SKILL.md`) {
		t.Errorf("changes %q lack the planted skills/a\\b/SKILL.md", changed)
	}
}

// List gives up past its deadline, and counts the bytes of the paths it
// queues against Names before it holds them.
func TestListDeadlineAndNames(t *testing.T) {
	_, dir := stateDir(t)
	lim := DefaultLimits
	lim.Deadline = time.Now().Add(-time.Second)
	if _, err := List(dir, ".claude", lim, InScope); err != ErrTooSlow {
		t.Errorf("past its deadline List = %v, want ErrTooSlow", err)
	}
	deep := t.TempDir()
	p := deep
	for range 8 {
		p = filepath.Join(p, strings.Repeat("d", 200))
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(p, fmt.Sprint(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lim = DefaultLimits
	lim.Names = 10000 // under the 20 paths of 1,600 bytes at the bottom
	if _, err := List(deep, ".claude", lim, InScope); err != ErrTooMany {
		t.Errorf("List = %v, want ErrTooMany", err)
	}
}

// PutBack's lists: the tops of what is removed (not what is under one),
// the directories on their way, parents first, and the tops but links.
func TestPutBackLists(t *testing.T) {
	var b bytes.Buffer
	remove := []string{"skills/evil/SKILL.md", "skills/evil", "skills/ln", "commands/a/b.md", "CLAUDE.md"}
	isLink := func(p string) bool { return p == "skills/ln" }
	files := []*Entry{{Path: "CLAUDE.md", Kind: File, Data: []byte("x\n"), Size: 2}}
	if err := PutBack(&b, remove, isLink, files); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(&b)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got[h.Name] = strings.ReplaceAll(string(data), "\x00", "|")
	}
	want := map[string]string{
		PutBackRemove:               "./CLAUDE.md|./commands/a/b.md|./skills/evil|./skills/ln|",
		PutBackDirs:                 "./commands|./commands/a|./skills|",
		PutBackTrees:                "./CLAUDE.md|./commands/a/b.md|./skills/evil|",
		PutBackFiles + "/CLAUDE.md": "x\n",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if err := PutBack(&b, []string{"a\x00b"}, isLink, nil); err == nil {
		t.Error("a path with a NUL was taken")
	}
}
