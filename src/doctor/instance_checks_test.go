package doctor

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/instance"
)

func filesResult(t *testing.T, in instance.Instance) []Result {
	t.Helper()
	return InstanceFiles(context.Background(), &Env{Instance: in})
}

// InstanceFiles names every link, FIFO, socket and setuid/setgid file in the
// instance, at most maxListed of them, and says how many more; it never
// follows a link (a directory moved aside and linked back is one entry, its
// contents are not walked) and never blocks on a FIFO.
func TestCheckFilesNamesPlantedEntries(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	if rs := filesResult(t, in); len(rs) != 1 || rs[0].Status != OK {
		t.Fatalf("empty instance: %+v", rs)
	}
	mem := filepath.Join(in.Root, "memory", "active")
	if err := os.MkdirAll(mem, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mem, "ok.md"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := filesResult(t, in); r[0].Status != OK {
		t.Fatalf("regular files only: %+v", r)
	}
	elsewhere := t.TempDir()
	for i := 0; i < 3; i++ {
		os.WriteFile(filepath.Join(elsewhere, fmt.Sprint(i)), nil, 0o644)
	}
	if err := os.Symlink(elsewhere, filepath.Join(in.Root, "playbooks")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(mem, "pipe.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in.Root, "tool"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(in.Root, "tool"), 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	want := []string{"memory/active/pipe.md (is a FIFO, not a regular file)", "playbooks (is a symbolic link)", "tool (setgid)"}
	if l, err := net.Listen("unix", filepath.Join(in.Root, "s.sock")); err == nil {
		defer l.Close()
		want = append(want, "s.sock (is a socket, not a regular file)")
	}
	rs := filesResult(t, in)
	if len(rs) != 1 || rs[0].Status != Fail || rs[0].Advice.Kind != UntrustedEntries {
		t.Fatalf("planted: %+v", rs)
	}
	for _, w := range want {
		if !strings.Contains(rs[0].Message, w) {
			t.Errorf("%q not named in %q", w, rs[0].Message)
		}
	}
	if !strings.HasPrefix(rs[0].Message, fmt.Sprintf("%d untrusted entries", len(want))) {
		t.Errorf("count: %q (the link's target must not be walked)", rs[0].Message)
	}

	// Many: the list stops at maxListed and says how many more.
	for i := 0; i < 30; i++ {
		if err := os.Symlink("/etc/passwd", filepath.Join(mem, fmt.Sprintf("l%02d.md", i))); err != nil {
			t.Fatal(err)
		}
	}
	rs = filesResult(t, in)
	n := 30 + len(want)
	if !strings.HasPrefix(rs[0].Message, fmt.Sprintf("%d untrusted entries", n)) ||
		!strings.HasSuffix(rs[0].Message, fmt.Sprintf(" and %d more", n-maxListed)) ||
		strings.Count(rs[0].Message, "), ") != maxListed-1 {
		t.Fatalf("capped list: %q", rs[0].Message)
	}
}

// A link in a layout path's place is not "missing" (instance.files names it).
func TestCheckLayoutDoesNotFollowLinks(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	for _, e := range instance.Layout() {
		p := in.Path(e)
		if e.Dir {
			os.MkdirAll(p, 0o755)
		} else {
			os.WriteFile(p, nil, 0o644)
		}
	}
	if rs := InstanceLayout(context.Background(), &Env{Instance: in}); rs[0].Status != OK {
		t.Fatalf("complete: %+v", rs)
	}
	moved := filepath.Join(t.TempDir(), "memory")
	if err := os.Rename(in.MemoryDir(), moved); err != nil {
		t.Fatal(err)
	}
	os.Symlink(moved, in.MemoryDir())
	if rs := InstanceLayout(context.Background(), &Env{Instance: in}); rs[0].Status != OK {
		t.Fatalf("linked memory/: %+v", rs)
	}
	if rs := filesResult(t, in); rs[0].Status != Fail || !strings.Contains(rs[0].Message, "memory (is a symbolic link)") {
		t.Fatalf("linked memory/: %+v", rs)
	}
}

// Attack: an agent that had the whole instance mounted left a git
// repository inside a share, which git on the host would use, or
// hard-linked a file it writes to one it must not (policy.yaml): the check
// names both. Hard links inside the shares are the agent's own business.
func TestCheckFilesGitAndHardLinks(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	mem := in.MemoryDir()
	os.MkdirAll(in.Data(), 0o755)
	os.WriteFile(in.Policy(), []byte("domains: []\n"), 0o644)
	if err := os.MkdirAll(filepath.Join(mem, "sub", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in.Policy(), filepath.Join(mem, "policy-alias.md")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(in.Data(), "a"), []byte("x"), 0o644)
	os.Link(filepath.Join(in.Data(), "a"), filepath.Join(in.Data(), "b"))
	os.WriteFile(filepath.Join(in.Data(), ".envrc"), []byte("x"), 0o644)
	res := filesResult(t, in)
	msg := ""
	for _, r := range res {
		msg += r.Message + "\n"
	}
	for _, want := range []string{"memory/sub/.git (.git in a share the agent writes (git runs its hooks", "policy.yaml (2 hard links",
		"data/.envrc (.envrc in a share the agent writes (direnv loads it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("check does not name %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "data/a") {
		t.Errorf("hard links inside a share reported:\n%s", msg)
	}
}

// InstanceFoundation warns about a template-only foundation.md, is content with
// a filled one, and leaves a missing file to instance.layout.
func TestCheckFoundation(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	if rs := InstanceFoundation(context.Background(), &Env{Instance: in}); len(rs) != 0 {
		t.Errorf("missing: %+v", rs)
	}
	os.WriteFile(in.Foundation(), []byte("## Core Values\n\n<!-- Example: honesty -->\n"), 0o644)
	if rs := InstanceFoundation(context.Background(), &Env{Instance: in}); len(rs) != 1 || rs[0].Status != Warn ||
		rs[0].Advice.Kind != FoundationTemplate || rs[0].Advice.Facts["path"] != in.Foundation() {
		t.Errorf("template-only: %+v", rs)
	}
	os.WriteFile(in.Foundation(), []byte("## Core Values\n\n- Honesty\n"), 0o644)
	if rs := InstanceFoundation(context.Background(), &Env{Instance: in}); len(rs) != 1 || rs[0].Status != OK {
		t.Errorf("filled: %+v", rs)
	}
}

// What a session's end moved aside is named, and not counted again as
// untrusted entries of the instance.
func TestCheckQuarantine(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	if rs := InstanceQuarantine(context.Background(), &Env{Instance: in}); len(rs) != 1 || rs[0].Status != OK {
		t.Fatalf("empty: %+v", rs)
	}
	os.MkdirAll(filepath.Join(in.MemoryDir(), "notes", ".git"), 0o755)
	if _, err := in.Neutralise("s", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	rs := InstanceQuarantine(context.Background(), &Env{Instance: in})
	if len(rs) != 1 || rs[0].Status != Warn || !strings.Contains(rs[0].Message, "/memory/notes/.git.quarantined") {
		t.Fatalf("after a move: %+v", rs)
	}
	if rs := filesResult(t, in); rs[0].Status != OK {
		t.Errorf("the quarantine counted as untrusted entries: %+v", rs)
	}
}
