package instance

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Attack: what a session leaves in the shares for host tools — a .git
// whose config runs a command, an .envrc, a .git that is a link — is
// moved into the quarantine whole, under an inert name, nothing followed;
// the rest stays.
func TestNeutralise(t *testing.T) {
	in := Instance{Root: t.TempDir()}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "HEAD"), []byte("outside\n"), 0o644)
	write := func(rel, text string) {
		p := filepath.Join(in.Root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory/notes/.git/config", "[core]\n\tfsmonitor = .git/hook\n")
	write("memory/notes/.git/hook", "#!/bin/sh\ntouch pwned\n")
	write("memory/notes/keep.md", "mine\n")
	write("playbooks/.envrc", "export PATH=/tmp/evil:$PATH\n")
	write("data/project/.vscode/tasks.json", "{}\n")
	write("foundation.md", "not a share\n")
	write(".git/HEAD", "the instance's own repository\n")
	os.MkdirAll(filepath.Join(in.Root, "skills", "x"), 0o755)
	if err := os.Symlink(outside, filepath.Join(in.Root, "skills", "x", ".git")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(in.Root, "logs"), 0o755)
	log := audit.New(in.FS(), filepath.Join(in.Root, "logs", "audit.log"))
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	moved, err := in.Neutralise("s1", now, log)
	if err != nil {
		t.Fatal(err)
	}
	want := []Quarantined{
		{"memory/notes/.git", "quarantine/20261126T090000Z-s1/memory/notes/.git.quarantined"},
		{"playbooks/.envrc", "quarantine/20261126T090000Z-s1/playbooks/.envrc.quarantined"},
		{"skills/x/.git", "quarantine/20261126T090000Z-s1/skills/x/.git.quarantined"},
		{"data/project/.vscode", "quarantine/20261126T090000Z-s1/data/project/.vscode.quarantined"},
	}
	if !sameSet(moved, want) {
		t.Fatalf("moved %+v", moved)
	}
	for _, m := range want {
		if _, err := os.Lstat(filepath.Join(in.Root, m.From)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", m.From, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(in.Root, want[0].To, "hook")); string(b) != "#!/bin/sh\ntouch pwned\n" {
		t.Errorf("the .git's content was not kept: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(in.Root, want[2].To)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the linked .git was not moved as a link: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "HEAD")); string(b) != "outside\n" {
		t.Error("the link's target changed")
	}
	for _, keep := range []string{"memory/notes/keep.md", "foundation.md", ".git/HEAD"} {
		if _, err := os.Stat(filepath.Join(in.Root, keep)); err != nil {
			t.Errorf("%s: %v", keep, err)
		}
	}
	if fi, _ := os.Stat(in.Quarantine()); fi == nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("quarantine mode %v", fi)
	}
	b, _ := os.ReadFile(filepath.Join(in.Root, "logs", "audit.log"))
	var e audit.Entry
	if json.Unmarshal(b, &e) != nil || e.Event != "instance.quarantine" || len(e.Detail["moved"].([]any)) != 4 {
		t.Errorf("audit: %s", b)
	}
	list, err := in.QuarantineList()
	if err != nil || len(list) != 4 || list[0] != "quarantine/20261126T090000Z-s1/data/project/.vscode.quarantined" {
		t.Errorf("QuarantineList = %v, %v", list, err)
	}
	if again, err := in.Neutralise("s2", now, log); err != nil || len(again) != 0 {
		t.Errorf("again: %v %v", again, err)
	}
	if got := TrustedIn("memory/notes/.git"); !strings.Contains(got, "git runs its hooks and fsmonitor") {
		t.Errorf("TrustedIn = %q", got)
	}
	if TrustedIn(".git") != "" || TrustedIn("memory/notes.md") != "" || TrustedIn("foundation.md") != "" {
		t.Error("TrustedIn outside the shares")
	}
}

// A tree deeper than MaxShareDepth is reported by name, after what was
// found above it is moved; a share that is a link is refused, not walked.
func TestNeutraliseReportsWhatItCannotWalk(t *testing.T) {
	in := Instance{Root: t.TempDir()}
	deep := filepath.Join(in.Root, "data")
	for i := 0; i <= MaxShareDepth+1; i++ {
		deep = filepath.Join(deep, "d")
	}
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, ".envrc"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(in.Root, "data", ".git"), 0o755)
	os.Symlink(t.TempDir(), filepath.Join(in.Root, "memory"))
	moved, err := in.Neutralise("", time.Now(), nil)
	if len(moved) != 1 || moved[0].From != "data/.git" {
		t.Errorf("moved %+v", moved)
	}
	if !errors.Is(err, safefile.ErrTooDeep) || !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("err = %v", err)
	}
}

func sameSet(a, b []Quarantined) bool {
	m := func(x []Quarantined) map[Quarantined]bool {
		r := map[Quarantined]bool{}
		for _, q := range x {
			r[q] = true
		}
		return r
	}
	return len(a) == len(b) && reflect.DeepEqual(m(a), m(b))
}
