package layer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func changes(t *testing.T, l *Layer) string {
	t.Helper()
	cs, err := l.Changes()
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, c := range cs {
		s += fmt.Sprintf("%s:%v:%s;", c.Path, c.Removed, c.Bad)
	}
	return s
}

func TestCopyLayer(t *testing.T) {
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	write(t, filepath.Join(dir, "memory/active/a.md"), "a")
	write(t, filepath.Join(dir, "memory/active/b.md"), "b")
	write(t, filepath.Join(dir, "memory/old/c.md"), "c")
	l, err := Create(root, "memory", "layers/s1/memory", "", Copy)
	if err != nil {
		t.Fatal(err)
	}
	if got := changes(t, l); got != "" {
		t.Fatalf("a fresh copy has changes: %s", got)
	}
	up := filepath.Join(dir, l.Upper())
	write(t, filepath.Join(up, "active/a.md"), "A")
	write(t, filepath.Join(up, "active/n.md"), "n")
	if err := os.RemoveAll(filepath.Join(up, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(up, "active/l.md")); err != nil {
		t.Fatal(err)
	}
	want := "active/a.md:false:;active/l.md:false:not a regular file (L---------);active/n.md:false:;old/c.md:true:;"
	if got := changes(t, l); got != want {
		t.Fatalf("changes\n got %s\nwant %s", got, want)
	}
	// The in-effect file replaced (as the host does: a rename) leaves the
	// snapshot as it was.
	if err := root.Write("memory/active/b.md", []byte("B"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := l.Base().Get("active/b.md")
	if err != nil || string(v.Data) != "b" {
		t.Fatalf("base of b.md = %q, %v; want the content the session started from", v.Data, err)
	}
	cs, _ := l.Changes()
	th := l.Theirs(cs)
	if v, _ := th.Get("old/c.md"); v.Exists {
		t.Fatal("a removed file reads as present")
	}
	if _, err := th.Get("active/l.md"); err == nil {
		t.Fatal("a link in the layer was read")
	}
	if err := l.Discard(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memory/active/a.md")); string(b) != "a" {
		t.Fatal("the share changed")
	}
}

// An upper directory as overlayfs leaves it: files written, whiteouts for
// removals, an opaque directory made anew.
func TestOverlayChanges(t *testing.T) {
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	write(t, filepath.Join(dir, "skills/x/SKILL.md"), "x")
	write(t, filepath.Join(dir, "skills/x/ref.md"), "r")
	write(t, filepath.Join(dir, "skills/y/SKILL.md"), "y")
	write(t, filepath.Join(dir, "skills/z/SKILL.md"), "z")
	l, err := Create(root, "skills", "layers/s1/skills", "layers/.work/0/skills", Overlay)
	if err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(dir, l.Upper())
	write(t, filepath.Join(up, "new/SKILL.md"), "n")
	write(t, filepath.Join(up, "x/SKILL.md"), "X")
	if err := unix.Mknod(filepath.Join(up, "y"), unix.S_IFCHR, 0); err != nil {
		t.Fatalf("mknod a whiteout (needs root or user namespaces as overlayfs does): %v", err)
	}
	write(t, filepath.Join(up, "z/other.md"), "o")
	if err := unix.Setxattr(filepath.Join(up, "z"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatalf("setxattr: %v", err)
	}
	want := "new/SKILL.md:false:;x/SKILL.md:false:;y/SKILL.md:true:;z/SKILL.md:true:;z/other.md:false:;"
	if got := changes(t, l); got != want {
		t.Fatalf("changes\n got %s\nwant %s", got, want)
	}
	if got := l.MountOptions(); got != "lowerdir="+filepath.Join(dir, "layers/s1/skills/lower")+",upperdir="+up+",workdir="+filepath.Join(dir, "layers/.work/0/skills")+",userxattr" {
		t.Fatalf("options %s", got)
	}
}

// A recycled snapshot, brought up to date, is the share as it is now: a
// file replaced (as the host does, by rename), one added, one removed, a
// directory removed.
func TestRecycledSnapshot(t *testing.T) {
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	write(t, filepath.Join(dir, "memory/active/a.md"), "a")
	write(t, filepath.Join(dir, "memory/active/b.md"), "b")
	write(t, filepath.Join(dir, "memory/old/c.md"), "c")
	l, err := Create(root, "memory", "layers/s1/memory", "layers/s1/memory/work", Overlay)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.Recycle("pool/x"); err != nil {
		t.Fatal(err)
	}
	if err := root.Write("memory/active/a.md", []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "memory/active/n.md"), "n")
	os.Remove(filepath.Join(dir, "memory/active/b.md"))
	os.RemoveAll(filepath.Join(dir, "memory/old"))
	if err := os.MkdirAll(filepath.Join(dir, "layers/s2/memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "pool/x"), filepath.Join(dir, "layers/s2/memory/lower")); err != nil {
		t.Fatal(err)
	}
	l2, err := Create(root, "memory", "layers/s2/memory", "layers/s2/memory/work", Overlay)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	filepath.WalkDir(filepath.Join(dir, l2.Lower()), func(p string, d os.DirEntry, err error) error {
		if d != nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(filepath.Join(dir, l2.Lower()), p)
			got += rel + "=" + string(b) + ";"
		}
		return nil
	})
	if want := "active/a.md=A;active/n.md=n;"; got != want {
		t.Fatalf("recycled snapshot %s, want %s", got, want)
	}
}

// A script's execute bit survives a merge: the file in effect keeps it when
// the session changed its text, and a session's own chmod (or new
// executable file) is taken, in either layer mode.
func TestMergeKeepsTheExecuteBit(t *testing.T) {
	for _, mode := range []Mode{Copy, Overlay} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			root := safefile.Beneath(dir)
			share := filepath.Join(dir, "skills")
			write(t, filepath.Join(share, "s/run.sh"), "echo 1\n")
			write(t, filepath.Join(share, "s/tool.sh"), "echo t\n")
			if err := os.Chmod(filepath.Join(share, "s/run.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			l, err := Create(root, "skills", "layers/s1/skills", "layers/s1/work", mode)
			if err != nil {
				t.Fatal(err)
			}
			up := filepath.Join(dir, l.Upper())
			// The session's writes: overlay copies a file up (keeping its
			// mode) before it changes; the copy layer holds them already.
			for _, f := range []string{"s/run.sh", "s/tool.sh"} {
				if mode == Overlay {
					b, _ := os.ReadFile(filepath.Join(share, f))
					fi, _ := os.Stat(filepath.Join(share, f))
					write(t, filepath.Join(up, f), string(b))
					if err := os.Chmod(filepath.Join(up, f), fi.Mode().Perm()); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(t, filepath.Join(up, "s/run.sh"), "echo 2\n")
			if err := os.Chmod(filepath.Join(up, "s/tool.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(up, "s/new.sh"), "echo n\n")
			if err := os.Chmod(filepath.Join(up, "s/new.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			cs, err := l.Changes()
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, c := range cs {
				paths = append(paths, c.Path)
			}
			outs := Trees(paths, l.Base(), DirTree{Root: root, Dir: "skills"}, l.Theirs(cs), nil)
			if err := Apply(root, "skills", outs); err != nil {
				t.Fatal(err)
			}
			for f, want := range map[string]string{"s/run.sh": "echo 2\n", "s/tool.sh": "echo t\n", "s/new.sh": "echo n\n"} {
				p := filepath.Join(share, f)
				b, err := os.ReadFile(p)
				if err != nil || string(b) != want {
					t.Errorf("%s: %q %v, want %q", f, b, err, want)
				}
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o100 == 0 {
					t.Errorf("%s: mode %v %v: the execute bit was lost", f, fi.Mode(), err)
				}
			}
		})
	}
}
