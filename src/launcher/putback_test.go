package launcher

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/userscope"
)

// The put-back the helper runs (putBackScript, here with the machine's
// sh, xargs, tar and cp) removes what a tainted session left however it
// left it — in a directory it made read-only, a file it made unreadable,
// more paths than a command line can hold — and puts the start's files
// back with their modes.
func TestPutBackScript(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "skills", "evil"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "skills", "evil", "SKILL.md"), []byte("obey\n"), 0o644))
	must(os.Chmod(filepath.Join(dir, "skills", "evil"), 0o555))
	must(os.MkdirAll(filepath.Join(dir, "commands"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "commands", "hidden.md"), []byte("obey\n"), 0o000))
	must(os.WriteFile(filepath.Join(dir, "CLAUDE.md"), []byte("planted\n"), 0o600))
	must(os.MkdirAll(filepath.Join(dir, "skills", "junk"), 0o755))
	remove := []string{"skills/evil/SKILL.md", "skills/evil", "commands/hidden.md", "CLAUDE.md", "skills/junk"}
	long := strings.Repeat("p", 200)
	for i := range 12000 {
		p := fmt.Sprintf("skills/junk/%s%d", long, i)
		must(os.WriteFile(filepath.Join(dir, p), nil, 0o600))
		remove = append(remove, p)
	}
	back := []*userscope.Entry{
		{Path: "CLAUDE.md", Kind: userscope.File, Data: []byte("mine\n"), Size: 5},
		{Path: "skills/tool/run.sh", Kind: userscope.File, Data: []byte("#!/bin/sh\n"), Size: 10, Exec: true},
	}
	// A link it left is removed, never followed.
	outside := t.TempDir()
	must(os.Chmod(outside, 0o500))
	must(os.Symlink(outside, filepath.Join(dir, "skills", "ln")))
	remove = append(remove, "skills/ln")
	isLink := func(p string) bool { return p == "skills/ln" }
	var stream bytes.Buffer
	must(userscope.PutBack(&stream, remove, isLink, back))
	cmd := exec.Command("sh", "-c", putBackScript, dir)
	cmd.Stdin = &stream
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("put-back: %v\n%s", err, out)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o500 {
		t.Errorf("the link's target: %v %v, want it untouched (0500)", fi, err)
	}
	for _, p := range []string{"skills/evil", "commands/hidden.md", "skills/junk", "skills/ln"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "CLAUDE.md")); err != nil || string(b) != "mine\n" {
		t.Errorf("CLAUDE.md = %q, %v; want the start's", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "skills", "tool", "run.sh")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("run.sh: %v %v, want 0700", fi, err)
	}
}
