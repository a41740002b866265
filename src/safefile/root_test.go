//go:build linux

// Tests of Root, the layer through which the host opens every path of an
// instance directory the agent's container can partly write. Each test sets
// up what a hostile container could leave in the instance (a link in some
// component, a FIFO, a socket, a device, a directory swapped for a link) and
// checks both the error and that nothing outside was read, made, changed or
// removed. Linux only: they watch for opens with inotify.

package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// ---- helpers ---------------------------------------------------------------

// within runs f and fails the test if it has not returned after 5 s: nothing
// in this layer may block on what the container left in the instance.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still blocked after 5s", what)
	}
}

// wantUnsafe checks err is a refusal of this layer: it wraps ErrUnsafe and an
// *UnsafeError naming path (when path is not "").
func wantUnsafe(t *testing.T, what string, err error, path string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want a refusal (ErrUnsafe)", what)
		return
	}
	if !errors.Is(err, ErrUnsafe) {
		t.Errorf("%s: err = %v, want one wrapping ErrUnsafe", what, err)
		return
	}
	var ue *UnsafeError
	if !errors.As(err, &ue) {
		t.Errorf("%s: err = %v (%T), want an *UnsafeError in its chain", what, err, err)
		return
	}
	if path != "" && ue.Path != path {
		t.Errorf("%s: UnsafeError.Path = %q, want %q (err %v)", what, ue.Path, path, err)
	}
}

func wantNotExist(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: err = %v, want one satisfying errors.Is(err, fs.ErrNotExist)", what, err)
	}
	if errors.Is(err, ErrUnsafe) {
		t.Errorf("%s: a missing path is not a refusal, got %v", what, err)
	}
}

// entryState is what snapshot records of one entry: type and permission
// bits, modification time (a directory's changes when an entry is made or
// removed in it, even briefly), a file's content, a link's target.
type entryState struct {
	Mode    fs.FileMode
	MTime   int64
	Content string
	Link    string
}

// snapshot records every entry beneath dir (dir included), links not
// followed.
func snapshot(t *testing.T, dir string) map[string]entryState {
	t.Helper()
	m := map[string]entryState{}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		s := entryState{Mode: fi.Mode(), MTime: fi.ModTime().UnixNano()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s.Content = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			if s.Link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = s
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return m
}

// unchanged fails if dir's tree differs from before.
func unchanged(t *testing.T, what, dir string, before map[string]entryState) {
	t.Helper()
	after := snapshot(t, dir)
	if reflect.DeepEqual(before, after) {
		return
	}
	var diffs []string
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s removed", k))
		case a != b:
			diffs = append(diffs, fmt.Sprintf("%s changed: %+v -> %+v", k, b, a))
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s appeared: %+v", k, a))
		}
	}
	sort.Strings(diffs)
	t.Errorf("%s: %s was touched:\n  %s", what, dir, strings.Join(diffs, "\n  "))
}

// wantLink fails unless p is still a symbolic link to target.
func wantLink(t *testing.T, what, p, target string) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Errorf("%s: link %s: %v", what, p, err)
		return
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s: %s is no longer a link (%v)", what, p, fi.Mode())
		return
	}
	if got, _ := os.Readlink(p); got != target {
		t.Errorf("%s: link %s now points to %q, want %q", what, p, got, target)
	}
}

func mustWrite(t *testing.T, p, content string, perm fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil { // umask
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, p string, perm fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// tempLeft fails if a ".tmp-" file was left in dir.
func tempLeft(t *testing.T, what, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("%s: temporary file %s left in %s", what, e.Name(), dir)
		}
	}
}

// ---- a link in each component ---------------------------------------------

const secret = "SECRET" // in every file outside the root

// linkFixture is a root and, beside it, an outside tree the container must
// not reach through a link:
//
//	outside/b/c        file   0640
//	outside/b/d/inner  file   0640 (b, b/d: 0750)
//	outside/c          file   0640
//	outside/d/inner    file   0640 (d: 0750)
//
// pos places the link(s) so that following them would reach that tree:
//
//	first:  root/a links to outside            (a/b/c resolves to outside/b/c)
//	middle: root/a/b links to outside          (a/b/c resolves to outside/c)
//	last:   root/a/b/c links to outside/c      (a file)
//	        root/a/b/d links to outside/d      (a directory)
//	        root/a/b/new links to outside/new  (dangling: following it creates outside/new)
type linkFixture struct {
	r             Root
	root, outside string
	links         map[string]string // absolute link path -> target
}

func newLinkFixture(t *testing.T, pos string) linkFixture {
	t.Helper()
	base := t.TempDir()
	f := linkFixture{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside"), links: map[string]string{}}
	for _, p := range []string{"b/c", "b/d/inner", "c", "d/inner"} {
		mustWrite(t, filepath.Join(f.outside, p), secret+" "+p, 0o640)
	}
	for _, d := range []string{"b/d", "b", "d", "."} {
		mustMkdir(t, filepath.Join(f.outside, d), 0o750)
	}
	link := func(target, at string) {
		mustSymlink(t, target, at)
		f.links[at] = target
	}
	switch pos {
	case "first":
		mustMkdir(t, f.root, 0o755)
		link(f.outside, filepath.Join(f.root, "a"))
	case "middle":
		mustMkdir(t, filepath.Join(f.root, "a"), 0o755)
		link(f.outside, filepath.Join(f.root, "a", "b"))
	case "last":
		mustMkdir(t, filepath.Join(f.root, "a", "b"), 0o755)
		link(filepath.Join(f.outside, "c"), filepath.Join(f.root, "a", "b", "c"))
		link(filepath.Join(f.outside, "d"), filepath.Join(f.root, "a", "b", "d"))
		link(filepath.Join(f.outside, "new"), filepath.Join(f.root, "a", "b", "new"))
	default:
		t.Fatalf("position %q", pos)
	}
	f.r = Beneath(f.root)
	return f
}

type pathKind int

const (
	fileP pathKind = iota // an existing file once links are followed
	dirP                  // an existing directory once links are followed
	newP                  // a missing entry once links are followed
)

var kindPath = map[pathKind]string{fileP: "a/b/c", dirP: "a/b/d", newP: "a/b/new"}

// walked is one call of Walk's fn.
type walked struct {
	Path string
	Type fs.FileMode
	Err  error
}

// rootOp is one Root method applied to a path. run returns the method's
// result (if any) and error; it uses what it got (writes to a file it
// opened) so that following a link would show outside. onLink checks the
// outcome when the path's last component is the link; nil means: refused
// with an UnsafeError, the link left as it was.
type rootOp struct {
	name   string
	kind   pathKind
	run    func(t *testing.T, f linkFixture, p string) (any, error)
	onLink func(t *testing.T, f linkFixture, p, link, target string, res any, err error)
}

func openAndScribble(r Root, p string, flag int) (any, error) {
	fh, err := r.OpenFile(p, flag, 0o666)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if _, err := fh.WriteString("PWNED"); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

var rootOps = []rootOp{
	{name: "Open", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		fh, err := f.r.Open(p)
		if err == nil {
			fh.Close()
		}
		return nil, err
	}},
	{name: "ReadFile", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		b, err := f.r.ReadFile(p, MaxRead)
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("ReadFile(%s) read the link's target: %q", p, b)
		}
		return b, err
	}},
	{name: "OpenFile-create-write", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return openAndScribble(f.r, p, os.O_CREATE|os.O_WRONLY)
	}},
	{name: "OpenFile-create-excl", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return openAndScribble(f.r, p, os.O_CREATE|os.O_EXCL|os.O_WRONLY)
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		// O_EXCL: anything there, a dangling link included, is "exists".
		if !errors.Is(err, fs.ErrExist) && !errors.Is(err, ErrUnsafe) {
			t.Errorf("OpenFile(O_EXCL) on a link: err = %v, want fs.ErrExist or a refusal", err)
		}
		wantLink(t, "OpenFile(O_EXCL)", link, target)
	}},
	{name: "OpenFile-truncate", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return openAndScribble(f.r, p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	}},
	{name: "OpenFile-readwrite", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return openAndScribble(f.r, p, os.O_RDWR)
	}},
	{name: "Write", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.Write(p, []byte("PWNED"), 0o640)
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		// The link itself is replaced by a regular file; its target is not
		// touched (checked by the caller).
		if err != nil {
			t.Fatalf("Write over a link: %v", err)
		}
		fi, err := os.Lstat(link)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
			t.Errorf("Write over a link: %s is now %v (%v), want a regular file 0640", link, fi.Mode(), err)
		}
		if b, _ := os.ReadFile(link); string(b) != "PWNED" {
			t.Errorf("Write over a link: content %q", b)
		}
		tempLeft(t, "Write", filepath.Dir(link))
	}},
	{name: "Create", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.Create(p, []byte("PWNED"), 0o640)
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		// Anything there, a dangling link included, is "exists".
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("Create on a link: err = %v, want fs.ErrExist", err)
		}
		wantLink(t, "Create", link, target)
		tempLeft(t, "Create", filepath.Dir(link))
	}},
	{name: "Append", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.Append(p, []byte("PWNED\n"), 0o640)
	}},
	{name: "AppendCount", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		n, err := f.r.AppendCount(p, []byte("PWNED\n"), 0o640)
		if err != nil && n != 0 {
			t.Errorf("AppendCount refused but reports %d bytes written", n)
		}
		return n, err
	}},
	{name: "Lock", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		unlock, err := f.r.Lock(p, time.Second)
		if err == nil {
			unlock()
		}
		return nil, err
	}},
	{name: "StatTree", kind: dirP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		err := f.r.StatTree(p, func(rel string, fi fs.FileInfo) error {
			if strings.Contains(rel, "inner") {
				t.Errorf("StatTree(%s) descended into the link's target: %s", p, rel)
			}
			return nil
		})
		return nil, err
	}},
	{name: "ReadDir", kind: dirP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		ents, err := f.r.ReadDir(p)
		for _, e := range ents {
			if e.Name() == "inner" {
				t.Errorf("ReadDir(%s) listed the link's target", p)
			}
		}
		return ents, err
	}},
	{name: "OpenDir", kind: dirP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		d, err := f.r.OpenDir(p)
		if err == nil {
			d.Close()
		}
		return nil, err
	}},
	{name: "Lstat", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return f.r.Lstat(p)
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, res any, err error) {
		// A link as the last component is described, not followed.
		if err != nil {
			t.Fatalf("Lstat of a link: %v", err)
		}
		fi := res.(fs.FileInfo)
		if fi.Mode()&fs.ModeSymlink == 0 || fi.Mode().Type() != fs.ModeSymlink {
			t.Errorf("Lstat of a link: mode %v, want a symbolic link", fi.Mode())
		}
		if fi.Name() != filepath.Base(link) {
			t.Errorf("Lstat of a link: name %q", fi.Name())
		}
		if fi.Size() != int64(len(target)) {
			t.Errorf("Lstat of a link: size %d, want the link's own (%d)", fi.Size(), len(target))
		}
		wantLink(t, "Lstat", link, target)
	}},
	{name: "Stat", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return f.r.Stat(p)
	}},
	{name: "Exists", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		if f.r.Exists(p) {
			return nil, errors.New("Exists reported true")
		}
		_, err := f.r.Stat(p) // Exists is Stat's verdict
		return nil, err
	}},
	{name: "MkdirAll", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.MkdirAll(p, 0o755)
	}},
	{name: "MkdirAll-below", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.MkdirAll(filepath.Join(p, "x", "y"), 0o755)
	}},
	{name: "Mkdir", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.Mkdir(p, 0o755)
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("Mkdir on a link: err = %v, want fs.ErrExist", err)
		}
		wantLink(t, "Mkdir", link, target)
	}},
	{name: "Remove", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.Remove(p)
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		// The link itself goes; its target stays (checked by the caller).
		if err != nil {
			t.Fatalf("Remove of a link: %v", err)
		}
		if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Remove of a link: %s still there (%v)", link, err)
		}
	}},
	{name: "RemoveAll", kind: dirP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.RemoveAll(p)
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		// The link goes, not its target's contents.
		if err != nil {
			t.Fatalf("RemoveAll of a link: %v", err)
		}
		if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("RemoveAll of a link: %s still there (%v)", link, err)
		}
	}},
	{name: "Rename-from", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.Rename(p, "moved")
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		// The link is moved itself.
		if err != nil {
			t.Fatalf("Rename of a link: %v", err)
		}
		wantLink(t, "Rename", filepath.Join(f.root, "moved"), target)
		if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Rename of a link: %s still there (%v)", link, err)
		}
	}},
	{name: "Rename-to", kind: newP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		src := filepath.Join(f.root, "src")
		mustWrite(t, src, "from inside", 0o600)
		err := f.r.Rename("src", p)
		if err != nil {
			if b, rerr := os.ReadFile(src); rerr != nil || string(b) != "from inside" {
				t.Errorf("refused Rename lost its source: %q %v", b, rerr)
			}
		}
		return nil, err
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, _ any, err error) {
		// The link is replaced itself.
		if err != nil {
			t.Fatalf("Rename onto a link: %v", err)
		}
		fi, err := os.Lstat(link)
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("Rename onto a link: %s is %v (%v), want the renamed file", link, fi, err)
		}
		if b, _ := os.ReadFile(link); string(b) != "from inside" {
			t.Errorf("Rename onto a link: content %q", b)
		}
	}},
	{name: "Chmod", kind: fileP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		return nil, f.r.Chmod(p, 0o777) // the target's mode is in the snapshot
	}},
	{name: "Walk", kind: dirP, run: func(t *testing.T, f linkFixture, p string) (any, error) {
		var seen []walked
		err := f.r.Walk(p, func(path string, d fs.DirEntry, err error) error {
			w := walked{Path: path, Err: err}
			if d != nil {
				w.Type = d.Type()
			}
			seen = append(seen, w)
			return err
		})
		for _, w := range seen {
			if strings.HasSuffix(w.Path, "inner") {
				t.Errorf("Walk(%s) descended into the link's target: %v", p, seen)
			}
		}
		return seen, err
	}, onLink: func(t *testing.T, f linkFixture, p, link, target string, res any, err error) {
		// Reported as a link, not descended into.
		if err != nil {
			t.Fatalf("Walk of a link: %v", err)
		}
		want := []walked{{Path: link, Type: fs.ModeSymlink}}
		if got := res.([]walked); !reflect.DeepEqual(got, want) {
			t.Errorf("Walk of a link: got %+v, want %+v", got, want)
		}
		wantLink(t, "Walk", link, target)
	}},
}

// TestRootLinkInParent: a link as the first component below the root or a
// middle one is refused by every method (absolute or relative path), with an
// UnsafeError naming the link; the outside tree it points to is neither read
// nor changed and the link stays.
func TestRootLinkInParent(t *testing.T) {
	for _, pos := range []string{"first", "middle"} {
		for _, op := range rootOps {
			for _, abs := range []bool{false, true} {
				name := pos + "/" + op.name
				if abs {
					name += "/abs"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					f := newLinkFixture(t, pos)
					var link, target string
					for link, target = range f.links {
					}
					p := kindPath[op.kind]
					if abs {
						p = filepath.Join(f.root, p)
					}
					before := snapshot(t, f.outside)
					var err error
					within(t, op.name, func() { _, err = op.run(t, f, p) })
					if op.name == "Exists" && err != nil && err.Error() == "Exists reported true" {
						t.Fatal(err)
					}
					wantUnsafe(t, op.name+"("+p+")", err, link)
					if ue := (*UnsafeError)(nil); errors.As(err, &ue) && !strings.Contains(ue.Why, "symbolic link") {
						t.Errorf("%s: Why = %q, want it to name the link", op.name, ue.Why)
					}
					unchanged(t, op.name, f.outside, before)
					wantLink(t, op.name, link, target)
				})
			}
		}
	}
}

// TestRootLinkAsLast: a link as the last component, pointing to a file, a
// directory or nowhere (following it would create the target). Each method
// either refuses (UnsafeError naming the path, link left as it was) or acts
// on the link itself (Lstat, Walk, Write, Create, Mkdir, Remove, RemoveAll,
// Rename); the target is never read, made, changed or removed.
func TestRootLinkAsLast(t *testing.T) {
	for _, op := range rootOps {
		for _, leaf := range []string{"c", "d", "new"} {
			for _, abs := range []bool{false, true} {
				name := op.name + "/" + leaf
				if abs {
					name += "/abs"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					f := newLinkFixture(t, "last")
					p := "a/b/" + leaf
					link := filepath.Join(f.root, p)
					target := f.links[link]
					if abs {
						p = link
					}
					before := snapshot(t, f.outside)
					var res any
					var err error
					within(t, op.name, func() { res, err = op.run(t, f, p) })
					if op.onLink != nil {
						op.onLink(t, f, p, link, target, res, err)
					} else {
						if op.name == "Exists" && err != nil && err.Error() == "Exists reported true" {
							t.Fatal(err)
						}
						wantUnsafe(t, op.name+"("+p+")", err, link)
						wantLink(t, op.name, link, target)
					}
					unchanged(t, op.name, f.outside, before)
				})
			}
		}
	}
}

// TestRootListsLinksAsLinks: ReadDir and Walk over a tree holding links
// report them as links (type and Info), never what they point to, and Walk
// does not descend through them.
func TestRootListsLinksAsLinks(t *testing.T) {
	for _, pos := range []string{"first", "middle", "last"} {
		t.Run(pos, func(t *testing.T) {
			f := newLinkFixture(t, pos)
			before := snapshot(t, f.outside)
			var seen []walked
			within(t, "Walk", func() {
				err := f.r.Walk(f.root, func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						t.Errorf("Walk: %s: %v", p, err)
						return nil
					}
					seen = append(seen, walked{Path: p, Type: d.Type()})
					return nil
				})
				if err != nil {
					t.Errorf("Walk: %v", err)
				}
			})
			got := map[string]fs.FileMode{}
			for _, w := range seen {
				got[w.Path] = w.Type
			}
			for link := range f.links {
				if typ, ok := got[link]; !ok || typ != fs.ModeSymlink {
					t.Errorf("Walk: %s reported as %v (seen %v), want a link", link, typ, ok)
				}
				for p := range got {
					if strings.HasPrefix(p, link+"/") {
						t.Errorf("Walk descended through link %s: %s", link, p)
					}
				}
				ents, err := f.r.ReadDir(filepath.Dir(link))
				if err != nil {
					t.Fatalf("ReadDir(%s): %v", filepath.Dir(link), err)
				}
				found := false
				for _, e := range ents {
					if e.Name() != filepath.Base(link) {
						continue
					}
					found = true
					fi, err := e.Info()
					if e.Type() != fs.ModeSymlink || e.IsDir() || err != nil || fi.Mode().Type() != fs.ModeSymlink {
						t.Errorf("ReadDir: %s: type %v, IsDir %v, Info %v %v; want a link", link, e.Type(), e.IsDir(), fi, err)
					}
				}
				if !found {
					t.Errorf("ReadDir(%s) did not list %s", filepath.Dir(link), link)
				}
			}
			if seen[0].Path != f.root || seen[0].Type != fs.ModeDir {
				t.Errorf("Walk started with %+v, want the root", seen[0])
			}
			// StatTree reports what Walk does, below the root.
			tree := map[string]fs.FileMode{}
			within(t, "StatTree", func() {
				err := f.r.StatTree(".", func(rel string, fi fs.FileInfo) error {
					tree[filepath.Join(f.root, filepath.FromSlash(rel))] = fi.Mode().Type()
					return nil
				})
				if err != nil {
					t.Errorf("StatTree: %v", err)
				}
			})
			delete(got, f.root)
			if !reflect.DeepEqual(tree, got) {
				t.Errorf("StatTree: %v, Walk: %v", tree, got)
			}
			unchanged(t, "Walk", f.outside, before)
		})
	}
}

// ---- a missing path ---------------------------------------------------------

// TestRootMissing: a missing entry, or a missing directory above it, is an
// error satisfying errors.Is(err, fs.ErrNotExist), not a refusal.
// RemoveAll of a missing path is no error.
func TestRootMissing(t *testing.T) {
	root := t.TempDir()
	mustMkdir(t, filepath.Join(root, "a"), 0o755)
	mustWrite(t, filepath.Join(root, "src"), "x", 0o600)
	r := Beneath(root)
	for _, p := range []string{"a/missing", "missing/x", "a/missing/x/y", filepath.Join(root, "a/missing")} {
		// Methods that read or act on an existing entry.
		checks := map[string]func() error{
			"Open":      func() error { f, err := r.Open(p); closeIf(f); return err },
			"ReadFile":  func() error { _, err := r.ReadFile(p, MaxRead); return err },
			"OpenFile":  func() error { f, err := r.OpenFile(p, os.O_RDWR, 0); closeIf(f); return err },
			"OpenDir":   func() error { f, err := r.OpenDir(p); closeIf(f); return err },
			"ReadDir":   func() error { _, err := r.ReadDir(p); return err },
			"Lstat":     func() error { _, err := r.Lstat(p); return err },
			"Stat":      func() error { _, err := r.Stat(p); return err },
			"Chmod":     func() error { return r.Chmod(p, 0o600) },
			"Remove":    func() error { return r.Remove(p) },
			"Rename":    func() error { return r.Rename(p, "dst") },
			"Walk":      func() error { return r.Walk(p, func(_ string, _ fs.DirEntry, err error) error { return err }) },
			"Mkdir-sub": func() error { return r.Mkdir(filepath.Join(p, "sub"), 0o755) },
			// Methods that create the last component but not its parent.
			"Write-sub":  func() error { return r.Write(filepath.Join(p, "f"), []byte("x"), 0o600) },
			"Create-sub": func() error { return r.Create(filepath.Join(p, "f"), []byte("x"), 0o600) },
			"Append-sub": func() error { return r.Append(filepath.Join(p, "f"), []byte("x"), 0o600) },
			"Lock-sub":   func() error { u, err := r.Lock(filepath.Join(p, "f"), time.Second); unlockIf(u); return err },
			"OpenFile-sub": func() error {
				f, err := r.OpenFile(filepath.Join(p, "f"), os.O_CREATE|os.O_WRONLY, 0o600)
				closeIf(f)
				return err
			},
			"Rename-to": func() error { return r.Rename("src", filepath.Join(p, "f")) },
		}
		for name, run := range checks {
			var err error
			within(t, name+"("+p+")", func() { err = run() })
			wantNotExist(t, name+"("+p+")", err)
		}
		if r.Exists(p) {
			t.Errorf("Exists(%s) = true", p)
		}
		if err := r.RemoveAll(p); err != nil {
			t.Errorf("RemoveAll(%s) = %v, want nil for a missing path", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "src")); err != nil {
		t.Errorf("src lost: %v", err)
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func unlockIf(u func()) {
	if u != nil {
		u()
	}
}

// ---- FIFOs, sockets, devices -----------------------------------------------

// watchOpens reports, when called, whether p was opened since watchOpens
// was (inotify IN_OPEN).
func watchOpens(t *testing.T, p string) func() bool {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, p, unix.IN_OPEN); err != nil {
		t.Fatalf("inotify watch %s: %v", p, err)
	}
	return func() bool {
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		return err == nil && n > 0
	}
}

type special struct {
	name string
	mode fs.FileMode // its type as Lstat reports it
	make func(t *testing.T, p string)
}

var specials = []special{
	{"fifo", fs.ModeNamedPipe, func(t *testing.T, p string) {
		if err := unix.Mkfifo(p, 0o666); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
	}},
	{"socket", fs.ModeSocket, func(t *testing.T, p string) {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatalf("listen %s: %v", p, err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		t.Cleanup(func() { l.Close() })
	}},
	{"device", fs.ModeDevice | fs.ModeCharDevice, func(t *testing.T, p string) {
		if os.Getuid() != 0 && os.Getenv("CI") != "true" {
			tooltest.Note(t.Name(), "making a device node needs root", "run the tests as root (CI=true runs it regardless)")
			t.Skip("making a device node needs root (CI=true runs it regardless)")
		}
		// /dev/null's numbers: harmless should it be opened, and openable
		// there, so that an open would show.
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
	}},
}

// shortTempDir is a temporary directory with a short path (a unix socket's
// path is limited to about 100 bytes).
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestRootSpecialFiles: a FIFO, a socket or a device where a file, a lock
// file, an append target or a directory is expected is refused promptly
// with an UnsafeError and never opened; Write replaces it by a regular file
// (rename, no open), Create finds it there, Lstat and Walk describe it.
func TestRootSpecialFiles(t *testing.T) {
	type check struct {
		name string
		run  func(r Root) error
		path string // the path the refusal names, relative to the root
	}
	checks := []check{
		{"Open", func(r Root) error { f, err := r.Open("x"); closeIf(f); return err }, "x"},
		{"ReadFile", func(r Root) error { _, err := r.ReadFile("x", MaxRead); return err }, "x"},
		{"OpenFile-create-write", func(r Root) error {
			f, err := r.OpenFile("x", os.O_CREATE|os.O_WRONLY, 0o600)
			closeIf(f)
			return err
		}, "x"},
		{"OpenFile-truncate", func(r Root) error {
			f, err := r.OpenFile("x", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			closeIf(f)
			return err
		}, "x"},
		{"OpenFile-readwrite", func(r Root) error { f, err := r.OpenFile("x", os.O_RDWR, 0); closeIf(f); return err }, "x"},
		{"OpenFile-append", func(r Root) error {
			f, err := r.OpenFile("x", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			closeIf(f)
			return err
		}, "x"},
		{"Append", func(r Root) error { return r.Append("x", []byte("line\n"), 0o600) }, "x"},
		{"Append-lock-file", func(r Root) error { return r.Append("y", []byte("line\n"), 0o600) }, "y.lock"},
		{"Lock", func(r Root) error { u, err := r.Lock("x", time.Second); unlockIf(u); return err }, "x"},
		{"Chmod", func(r Root) error { return r.Chmod("x", 0o600) }, "x"},
		{"Stat", func(r Root) error { _, err := r.Stat("x"); return err }, "x"},
		{"Exists", func(r Root) error {
			if r.Exists("x") {
				return errors.New("Exists reported true")
			}
			_, err := r.Stat("x")
			return err
		}, "x"},
		{"ReadDir", func(r Root) error { _, err := r.ReadDir("x"); return err }, "x"},
		{"OpenDir", func(r Root) error { f, err := r.OpenDir("x"); closeIf(f); return err }, "x"},
		{"MkdirAll", func(r Root) error { return r.MkdirAll("x", 0o755) }, "x"},
		// The special file as a directory above the path.
		{"Open-below", func(r Root) error { f, err := r.Open("x/f"); closeIf(f); return err }, "x"},
		{"Write-below", func(r Root) error { return r.Write("x/f", []byte("data"), 0o600) }, "x"},
		{"MkdirAll-below", func(r Root) error { return r.MkdirAll("x/f/g", 0o755) }, "x"},
		{"Lstat-below", func(r Root) error { _, err := r.Lstat("x/f"); return err }, "x"},
	}
	for _, sp := range specials {
		for _, c := range checks {
			t.Run(sp.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				root := shortTempDir(t)
				p := filepath.Join(root, c.path)
				sp.make(t, p)
				before, err := os.Lstat(p)
				if err != nil {
					t.Fatal(err)
				}
				opened := watchOpens(t, p)
				r := Beneath(root)
				within(t, c.name, func() { err = c.run(r) })
				wantUnsafe(t, c.name, err, p)
				var ue *UnsafeError
				if errors.As(err, &ue) && !strings.Contains(strings.ToLower(ue.Why), sp.name[:4]) {
					t.Errorf("%s: Why = %q, want it to name the %s", c.name, ue.Why, sp.name)
				}
				if opened() {
					t.Errorf("%s opened the %s before refusing it", c.name, sp.name)
				}
				after, err := os.Lstat(p)
				if err != nil || after.Mode() != before.Mode() {
					t.Errorf("%s: the %s changed: %v -> %v (%v)", c.name, sp.name, before.Mode(), after, err)
				}
			})
		}
		t.Run(sp.name+"/acts-on-entry", func(t *testing.T) {
			root := shortTempDir(t)
			p := filepath.Join(root, "x")
			sp.make(t, p)
			opened := watchOpens(t, p)
			r := Beneath(root)
			within(t, "Lstat, Walk, ReadDir, Create", func() {
				fi, err := r.Lstat("x")
				if err != nil || fi.Mode().Type() != sp.mode.Type() {
					t.Errorf("Lstat: %v %v, want type %v", fi, err, sp.mode.Type())
				}
				var seen []walked
				err = r.Walk(".", func(p string, d fs.DirEntry, err error) error {
					seen = append(seen, walked{Path: p, Type: d.Type(), Err: err})
					return err
				})
				want := []walked{{Path: root, Type: fs.ModeDir}, {Path: p, Type: sp.mode.Type()}}
				if err != nil || !reflect.DeepEqual(seen, want) {
					t.Errorf("Walk: %+v %v, want %+v", seen, err, want)
				}
				ents, err := r.ReadDir(".")
				if err != nil || len(ents) != 1 || ents[0].Type() != sp.mode.Type() {
					t.Errorf("ReadDir: %v %v", ents, err)
				}
				if err := r.Create("x", []byte("data"), 0o600); !errors.Is(err, fs.ErrExist) {
					t.Errorf("Create over a %s: %v, want fs.ErrExist", sp.name, err)
				}
			})
			if opened() {
				t.Errorf("the %s was opened", sp.name)
			}
			within(t, "Write", func() {
				if err := r.Write("x", []byte("data"), 0o640); err != nil {
					t.Errorf("Write over a %s: %v", sp.name, err)
				}
			})
			fi, err := os.Lstat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
				t.Errorf("after Write: %v %v, want a regular file 0640", fi, err)
			}
			if b, _ := os.ReadFile(p); string(b) != "data" {
				t.Errorf("after Write: %q", b)
			}
			tempLeft(t, "Write", root)
			if err := r.Remove("x"); err != nil {
				t.Error(err)
			}
		})
		t.Run(sp.name+"/remove", func(t *testing.T) {
			root := shortTempDir(t)
			mustMkdir(t, filepath.Join(root, "d"), 0o755)
			sp.make(t, filepath.Join(root, "x"))
			sp.make(t, filepath.Join(root, "d", "x"))
			r := Beneath(root)
			within(t, "Remove, RemoveAll", func() {
				if err := r.Remove("x"); err != nil {
					t.Errorf("Remove: %v", err)
				}
				if err := r.RemoveAll("d"); err != nil {
					t.Errorf("RemoveAll: %v", err)
				}
			})
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("left: %v", ents)
			}
		})
	}
}

// TestRootFIFOWithPeer: a FIFO whose other end the container holds open
// (where an open would not fail with ENXIO) is still refused promptly, and
// nothing is written to it.
func TestRootFIFOWithPeer(t *testing.T) {
	root := shortTempDir(t)
	p := filepath.Join(root, "x")
	if err := unix.Mkfifo(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "y.lock"), 0o666); err != nil {
		t.Fatal(err)
	}
	reader, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(reader)
	writer, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(writer)
	r := Beneath(root)
	within(t, "Append, ReadFile, Lock", func() {
		wantUnsafe(t, "Append", r.Append("x", []byte("line\n"), 0o600), p)
		_, err := r.ReadFile("x", MaxRead)
		wantUnsafe(t, "ReadFile", err, p)
		u, err := r.Lock("x", time.Second)
		unlockIf(u)
		wantUnsafe(t, "Lock", err, p)
		wantUnsafe(t, "Append with a FIFO lock file", r.Append("y", []byte("line\n"), 0o600), filepath.Join(root, "y.lock"))
	})
	buf := make([]byte, 64)
	if n, err := unix.Read(reader, buf); n > 0 {
		t.Errorf("the FIFO received %q (%v)", buf[:n], err)
	}
	if _, err := os.Lstat(filepath.Join(root, "y")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append wrote y although its lock file is a FIFO: %v", err)
	}
}

// raceTime is how long a swap race runs: d, or a quarter of it with -short
// (still hundreds of swaps).
func raceTime(d time.Duration) time.Duration {
	if testing.Short() {
		return d / 4
	}
	return d
}

// TestRootSpecialSwapRace: while one goroutine keeps putting a FIFO in place
// of a regular file and back, ReadFile, Lock and Chmod on it never block,
// never take the FIFO for the file (a FIFO read gives "" at once), never
// lock it and never change its mode: a FIFO swapped in after the look
// before opening is caught by the fstat after.
func TestRootSpecialSwapRace(t *testing.T) {
	root := shortTempDir(t)
	x := filepath.Join(root, "x")
	reg := filepath.Join(root, "x.reg")
	fifo := filepath.Join(root, "x.fifo")
	mustWrite(t, x, "regular", 0o600)
	if err := unix.Mkfifo(fifo, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fifo, 0o640); err != nil {
		t.Fatal(err)
	}
	r := Beneath(root)
	// Swap atomically where the filesystem can, so that x is always there:
	// Lock would otherwise create an empty x in the gap (which ReadFile
	// then rightly reads). Else rename aside and back, without Lock.
	exchange := unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE) == nil
	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if exchange {
				if err := unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
			} else {
				for _, mv := range [][2]string{{x, reg}, {fifo, x}, {x, fifo}, {reg, x}} {
					if err := os.Rename(mv[0], mv[1]); err != nil {
						t.Errorf("swap: %v", err)
						return
					}
				}
			}
			swaps.Add(1)
		}
	}()
	var refused, ok int
	deadline := time.Now().Add(raceTime(700 * time.Millisecond))
	within(t, "ReadFile, Lock, Chmod against a swapped-in FIFO", func() {
		for i := 0; time.Now().Before(deadline); i++ {
			var err error
			switch i % 3 {
			case 0:
				var b []byte
				b, err = r.ReadFile("x", MaxRead)
				if err == nil && string(b) != "regular" {
					t.Errorf("ReadFile returned %q: read the FIFO", b)
					return
				}
			case 1:
				if !exchange {
					continue
				}
				var u func()
				u, err = r.Lock("x", time.Second)
				unlockIf(u)
			case 2:
				err = r.Chmod("x", 0o600)
			}
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrUnsafe):
				refused++
			case !errors.Is(err, fs.ErrNotExist):
				t.Errorf("unexpected error %v", err)
				return
			}
		}
	})
	close(stop)
	wg.Wait()
	t.Logf("%d swaps (exchange %v), %d ok, %d refused", swaps.Load(), exchange, ok, refused)
	if swaps.Load() == 0 {
		t.Fatal("never swapped")
	}
	var fifoPath string
	for _, p := range []string{x, reg, fifo} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().Type() == fs.ModeNamedPipe {
			fifoPath = p
		}
	}
	if fi, err := os.Lstat(fifoPath); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the FIFO's mode changed: %v %v", fi, err)
	}
}

// ---- paths outside the root --------------------------------------------------

// TestRootRefusesPathsOutside: "..", an absolute path elsewhere, a sibling
// sharing the root's name as a prefix, a path whose cleaning leaves the root:
// every method refuses, and nothing outside changes. The root itself is no
// entry to remove or replace.
func TestRootRefusesPathsOutside(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	mustMkdir(t, filepath.Join(root, "a"), 0o755)
	mustWrite(t, filepath.Join(root, "a", "f"), "inside", 0o600)
	mustWrite(t, filepath.Join(base, "outside", "f"), secret, 0o640)
	mustWrite(t, filepath.Join(base, "rootx", "f"), secret, 0o640)
	mustWrite(t, filepath.Join(root, "src"), "src", 0o600)
	r := Beneath(root)
	paths := []string{
		"..", "../outside", "../outside/f", "a/../../outside/f", "a/../..", "../root/../outside/f",
		base, filepath.Join(base, "outside"), filepath.Join(base, "outside", "f"),
		filepath.Join(base, "rootx", "f"), root + "x", // the root's name is a prefix of theirs
		filepath.Join(root, "..", "outside", "f"), root + "/../outside/f", root + "/a/../../outside/f",
		// (no real system paths: a broken Root under test would act on them)
	}
	before := snapshot(t, base)
	for _, p := range paths {
		ops := map[string]func() error{
			"Open":        func() error { f, err := r.Open(p); closeIf(f); return err },
			"ReadFile":    func() error { _, err := r.ReadFile(p, MaxRead); return err },
			"OpenFile":    func() error { f, err := r.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600); closeIf(f); return err },
			"OpenDir":     func() error { f, err := r.OpenDir(p); closeIf(f); return err },
			"ReadDir":     func() error { _, err := r.ReadDir(p); return err },
			"Write":       func() error { return r.Write(p, []byte("PWNED"), 0o600) },
			"Create":      func() error { return r.Create(filepath.Join(p, "new"), []byte("PWNED"), 0o600) },
			"Append":      func() error { return r.Append(p, []byte("PWNED"), 0o600) },
			"Lock":        func() error { u, err := r.Lock(p, time.Second); unlockIf(u); return err },
			"Lstat":       func() error { _, err := r.Lstat(p); return err },
			"Stat":        func() error { _, err := r.Stat(p); return err },
			"MkdirAll":    func() error { return r.MkdirAll(filepath.Join(p, "new"), 0o755) },
			"Mkdir":       func() error { return r.Mkdir(filepath.Join(p, "new"), 0o755) },
			"Remove":      func() error { return r.Remove(p) },
			"RemoveAll":   func() error { return r.RemoveAll(p) },
			"Rename-from": func() error { return r.Rename(p, "moved") },
			"Rename-to":   func() error { return r.Rename("src", filepath.Join(p, "moved")) },
			"Chmod":       func() error { return r.Chmod(p, 0o777) },
			"Walk": func() error {
				return r.Walk(p, func(q string, _ fs.DirEntry, err error) error {
					if err == nil {
						t.Errorf("Walk(%s) visited %s", p, q)
					}
					return err
				})
			},
		}
		for name, run := range ops {
			err := run()
			wantUnsafe(t, name+"("+p+")", err, "")
			var ue *UnsafeError
			if errors.As(err, &ue) && !strings.Contains(ue.Why, "outside") {
				t.Errorf("%s(%s): Why = %q, want it to say outside", name, p, ue.Why)
			}
		}
		if r.Exists(p) {
			t.Errorf("Exists(%s) = true", p)
		}
	}
	// The root itself: no entry beneath it, so neither removed nor replaced.
	for _, p := range []string{".", "", root, root + "/", "a/..", root + "/a/.."} {
		for name, run := range map[string]func() error{
			"Remove":    func() error { return r.Remove(p) },
			"RemoveAll": func() error { return r.RemoveAll(p) },
			"Write":     func() error { return r.Write(p, []byte("PWNED"), 0o600) },
			"Create":    func() error { return r.Create(p, []byte("PWNED"), 0o600) },
			"Rename":    func() error { return r.Rename(p, "moved") },
			"Open":      func() error { f, err := r.Open(p); closeIf(f); return err },
		} {
			wantUnsafe(t, name+"("+p+")", run(), root)
		}
	}
	unchanged(t, "paths outside", base, before)
	// Paths that clean to somewhere inside are fine.
	for _, p := range []string{"a/f", "./a/f", "a/../a/f", "a//f", filepath.Join(root, "a", "f"), root + "/./a/../a/f"} {
		if b, err := r.ReadFile(p, MaxRead); err != nil || string(b) != "inside" {
			t.Errorf("ReadFile(%s) = %q, %v", p, b, err)
		}
	}
	for _, p := range []string{".", "", root, "a/.."} {
		if ents, err := r.ReadDir(p); err != nil || len(ents) != 2 {
			t.Errorf("ReadDir(%q) = %v, %v", p, ents, err)
		}
	}
}

// ---- a directory swapped for a link ----------------------------------------

// TestRootHeldDirectoryIgnoresSwap: once a method has opened a parent
// directory, swapping that directory for a link to elsewhere does not
// redirect what follows; it happens in the directory opened. The steps are
// the ones OpenFile and Write take (parent, then openLeaf or writeTempAt and
// renameat), with the swap put between them.
func TestRootHeldDirectoryIgnoresSwap(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	mustMkdir(t, filepath.Join(root, "d"), 0o755)
	mustWrite(t, filepath.Join(root, "d", "f"), "inside", 0o600)
	mustWrite(t, filepath.Join(outside, "f"), secret, 0o600)
	r := Beneath(root)
	before := snapshot(t, outside)

	dirfd, name, err := r.parent("d/f", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	aside := filepath.Join(root, "d.aside")
	if err := os.Rename(filepath.Join(root, "d"), aside); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, filepath.Join(root, "d"))

	// The path now leads through the link: refused from scratch.
	_, err = r.ReadFile("d/f", MaxRead)
	wantUnsafe(t, "ReadFile after the swap", err, filepath.Join(root, "d"))
	// The held directory is the real one.
	f, err := r.openLeaf(dirfd, name, r.abs("d/f"), os.O_RDWR|os.O_APPEND, 0, false, true)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	if n, _ := f.ReadAt(b, 0); string(b[:n]) != "inside" {
		t.Errorf("read through the held directory: %q, want the real file's", b[:n])
	}
	if _, err := f.WriteString("+held"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tmp, err := r.writeTempAt(dirfd, "g", r.abs("d/g"), []byte("written"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, "g"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(aside, "f")); string(b) != "inside+held" {
		t.Errorf("real d/f = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(aside, "g")); string(b) != "written" {
		t.Errorf("real d/g = %q", b)
	}
	unchanged(t, "held directory", outside, before)
}

// TestRootDirSwapRace: while one goroutine keeps putting a link to an
// outside directory in place of a real directory and back, thousands of
// Write, Append, Create, ReadFile and ReadDir calls on paths below it either
// act on the real directory or fail; none reads, makes or changes anything
// outside.
func TestRootDirSwapRace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	d := filepath.Join(root, "d")
	aside := filepath.Join(root, "d.real")
	mustMkdir(t, d, 0o755)
	mustWrite(t, filepath.Join(d, "f"), "inside-start", 0o600)
	mustWrite(t, filepath.Join(outside, "f"), secret, 0o600)
	mustWrite(t, filepath.Join(outside, "only-outside"), secret, 0o600)
	before := snapshot(t, outside)
	r := Beneath(root)

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := os.Rename(d, aside); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			if err := os.Symlink(outside, d); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			swaps.Add(1)
			time.Sleep(time.Duration(swaps.Load()%3) * 20 * time.Microsecond)
			if err := os.Remove(d); err != nil {
				t.Errorf("swap back: %v", err)
				return
			}
			if err := os.Rename(aside, d); err != nil {
				t.Errorf("swap back: %v", err)
				return
			}
		}
	}()

	var refused, missing, appended int
	lastWrite := "inside-start"
	deadline := time.Now().Add(raceTime(1200 * time.Millisecond))
	expected := func(what string, err error) bool { // false: a real failure
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrUnsafe):
			refused++
			return true
		case errors.Is(err, fs.ErrNotExist):
			missing++
			return true
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			// The link was there at open and gone again by the
			// explaining fstatat: refused all the same, though not as an
			// UnsafeError.
			refused++
			return true
		}
		t.Errorf("%s: unexpected error %v", what, err)
		return false
	}
	i := 0
	for ; i < 20000 && time.Now().Before(deadline); i++ {
		data := fmt.Sprintf("inside-%d", i)
		if err := r.Write("d/f", []byte(data), 0o600); err == nil {
			lastWrite = data
		} else if !expected("Write", err) {
			break
		}
		if err := r.Append("d/log", []byte("line\n"), 0o600); err == nil {
			appended++
		} else if !expected("Append", err) {
			break
		}
		if i%16 == 0 {
			if err := r.Create(fmt.Sprintf("d/new-%d", i), []byte("x"), 0o600); !expected("Create", err) {
				break
			}
		}
		b, err := r.ReadFile("d/f", MaxRead)
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("ReadFile returned the outside file: %q", b)
		}
		if err == nil && !strings.HasPrefix(string(b), "inside-") {
			t.Fatalf("ReadFile returned %q", b)
		}
		if err != nil && !expected("ReadFile", err) {
			break
		}
		ents, err := r.ReadDir("d")
		for _, e := range ents {
			if e.Name() == "only-outside" {
				t.Fatalf("ReadDir listed the outside directory")
			}
		}
		if err != nil && !expected("ReadDir", err) {
			break
		}
	}
	close(stop)
	wg.Wait()
	if _, err := os.Lstat(aside); err == nil { // stopped between the two halves
		os.Remove(d)
		if err := os.Rename(aside, d); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds, %d swaps, %d refused, %d missing", i, swaps.Load(), refused, missing)
	if swaps.Load() == 0 {
		t.Fatal("the directory was never swapped")
	}
	unchanged(t, "swap race", outside, before)
	// Everything that succeeded landed in the real directory.
	if b, _ := os.ReadFile(filepath.Join(d, "f")); string(b) != lastWrite {
		t.Errorf("real d/f = %q, want the last successful Write %q", b, lastWrite)
	}
	b, _ := os.ReadFile(filepath.Join(d, "log"))
	if want := strings.Repeat("line\n", appended); string(b) != want {
		t.Errorf("real d/log has %d bytes, want %d whole lines", len(b), appended)
	}
	tempLeft(t, "swap race", d)
}

// ---- the root reached through a link -----------------------------------------

// TestRootThroughLink: the root's own path may lead through a link (the user
// keeps the instance elsewhere); only the components below it are checked.
func TestRootThroughLink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	mustMkdir(t, real, 0o755)
	link := filepath.Join(base, "link")
	mustSymlink(t, real, link)
	r := Beneath(link)
	if r.Dir() != link {
		t.Errorf("Dir() = %q, want %q", r.Dir(), link)
	}
	if err := r.MkdirAll("d/e", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.Write("d/e/f", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Create(filepath.Join(link, "d", "g"), []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Append("log", []byte("line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := r.Lock("d/lock", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	u()
	if b, err := r.ReadFile(filepath.Join(link, "d/e/f"), MaxRead); err != nil || string(b) != "one" {
		t.Errorf("ReadFile via the link's path: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(real, "d", "g")); string(b) != "two" {
		t.Errorf("real d/g = %q", b)
	}
	if fi, err := r.Lstat("."); err != nil || !fi.IsDir() {
		t.Errorf("Lstat(.) = %v, %v", fi, err)
	}
	if ents, err := r.ReadDir(link); err != nil || len(ents) != 3 {
		t.Errorf("ReadDir(root) = %v, %v", ents, err)
	}
	var n int
	if err := r.Walk(".", func(string, fs.DirEntry, error) error { n++; return nil }); err != nil || n != 8 {
		t.Errorf("Walk: %d entries, %v", n, err)
	}
	if err := r.Rename("d/g", "g"); err != nil {
		t.Error(err)
	}
	if err := r.RemoveAll("d"); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the root's link went: %v", err)
	}
	if ents, _ := os.ReadDir(real); len(ents) != 3 { // g, log, log.lock
		t.Errorf("real dir: %v", ents)
	}
}

// ---- Lock ------------------------------------------------------------------------

// TestRootLockTimesOut: a second Lock on the same file from the same process
// (another descriptor, as the path is opened again) waits and times out
// with ErrLockTimeout; once released it is free. Append takes the same lock.
func TestRootLockTimesOut(t *testing.T) {
	root := t.TempDir()
	r := Beneath(root)
	unlock, err := r.Lock("x.lock", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"x.lock", filepath.Join(root, "x.lock"), "./x.lock"} {
		start := time.Now()
		var u func()
		within(t, "second Lock", func() { u, err = r.Lock(p, 50*time.Millisecond) })
		if !errors.Is(err, ErrLockTimeout) {
			unlockIf(u)
			t.Fatalf("second Lock(%s): %v, want ErrLockTimeout", p, err)
		}
		if el := time.Since(start); el < 50*time.Millisecond || el > 2*time.Second {
			t.Errorf("second Lock(%s) gave up after %v", p, el)
		}
	}
	unlock()
	u, err := r.Lock("x.lock", 50*time.Millisecond)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	u()

	// Append waits for its lock file.
	hold, err := r.Lock("log.lock", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Append("log", []byte("line\n"), 0o600) }()
	select {
	case err := <-done:
		t.Fatalf("Append went ahead while its lock was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	hold()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Append still waiting after the lock was released")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "log")); string(b) != "line\n" {
		t.Errorf("log = %q", b)
	}
}

// Attack: the agent leaves a huge (sparse, so free to make) file where the
// host reads one; ReadFile refuses it instead of exhausting memory.
func TestRootReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxRead + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Beneath(dir).ReadFile("huge", MaxRead); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if err := os.Truncate(filepath.Join(dir, "huge"), 10); err != nil {
		t.Fatal(err)
	}
	if b, err := Beneath(dir).ReadFile("huge", MaxRead); err != nil || len(b) != 10 {
		t.Fatalf("small file: %d bytes, %v", len(b), err)
	}
	// The root's own Stat reports it, whatever kind of path leads there.
	if fi, err := Beneath(dir).Stat("."); err != nil || !fi.IsDir() {
		t.Fatalf("Stat(.) = %v, %v", fi, err)
	}
}

// Each read names its cap: a file over it is refused without being read
// (the error names it and the cap), one at the cap is read whole, and so
// is a file refused that grows past the cap while it is read.
func TestRootReadFileCap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Beneath(dir)
	if b, err := r.ReadFile("f", 4096); err != nil || len(b) != 4096 {
		t.Fatalf("at the cap: %d bytes, %v", len(b), err)
	}
	_, err := r.ReadFile("f", 4095)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Path != p || tl.Size != 4096 || tl.Max != 4095 {
		t.Fatalf("over the cap: %v", err)
	}
	if !strings.Contains(err.Error(), p+" is larger than 4095 bytes (4096 bytes): not read") {
		t.Errorf("message %q", err)
	}
	// Growing while read: readAtMost reads a file whose fstat said 0 bytes
	// but that holds more (as one another process appends to would).
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := readAtMost(&growing{File: f}, 1000); !errors.As(err, &tl) || tl.Size != 1001 {
		t.Fatalf("growing file: %v", err)
	}
	for n, want := range map[int64]string{1 << 30: "1 GiB", 1 << 20: "1 MiB", 256 << 10: "256 KiB", 1000: "1000 bytes", 3 << 20: "3 MiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// growing is a file that says it is empty and reads 1 MiB of zeros: a file
// that grows between the fstat and the read.
type growing struct {
	*os.File
	n int
}

func (g *growing) Stat() (fs.FileInfo, error) { return zeroSize{}, nil }

func (g *growing) Read(b []byte) (int, error) {
	if g.n >= 1<<20 {
		return 0, io.EOF
	}
	n := min(len(b), 1<<20-g.n)
	clear(b[:n])
	g.n += n
	return n, nil
}

type zeroSize struct{ fs.FileInfo }

func (zeroSize) Size() int64 { return 0 }

// TestStatTree: every entry below the directory, by its path relative to
// it; fs.SkipDir skips a directory's entries; a missing directory has none.
func TestStatTree(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"s/a/b", "s/skip"} {
		mustMkdir(t, filepath.Join(root, d), 0o755)
	}
	for _, f := range []string{"s/top.md", "s/a/b/deep.md", "s/skip/hidden.md"} {
		mustWrite(t, filepath.Join(root, f), "x", 0o600)
	}
	r := Beneath(root)
	got := map[string]bool{}
	err := r.StatTree("s", func(rel string, fi fs.FileInfo) error {
		got[rel] = fi.IsDir()
		if rel == "skip" {
			return fs.SkipDir
		}
		return nil
	})
	want := map[string]bool{"top.md": false, "a": true, "a/b": true, "a/b/deep.md": false, "skip": true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("StatTree: %v %v, want %v", got, err, want)
	}
	if err := r.StatTree("missing", func(string, fs.FileInfo) error { return errors.New("called") }); err != nil {
		t.Fatalf("StatTree of a missing directory: %v", err)
	}
}

// Link names a regular file again; a write of the original (a new file
// renamed over it) leaves the link as it was; a link, or a path through
// one, is refused. MoveTo moves an entry into another root.
func TestLinkAndMoveTo(t *testing.T) {
	dir, other, outside := t.TempDir(), t.TempDir(), t.TempDir()
	r := Beneath(dir)
	if err := r.Write("idx", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Link("idx", "copy"); err != nil {
		t.Fatal(err)
	}
	if err := r.Write("idx", []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadFile("copy", 10); string(b) != "one" {
		t.Errorf("the link followed the write: %q %v", b, err)
	}
	os.WriteFile(filepath.Join(outside, "f"), []byte("outside"), 0o644)
	os.Symlink(filepath.Join(outside, "f"), filepath.Join(dir, "ln"))
	os.Symlink(outside, filepath.Join(dir, "lndir"))
	for _, p := range []string{"ln", "lndir/f"} {
		if err := r.Link(p, "x"); err == nil {
			t.Errorf("%s: linked through a link", p)
		}
	}
	if err := r.MoveTo("copy", Beneath(other), "moved"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(other, "moved")); string(b) != "one" || r.Exists("copy") {
		t.Errorf("moved: %q %v", b, err)
	}
	if err := r.MoveTo("lndir/f", Beneath(other), "f"); err == nil {
		t.Error("moved through a link")
	}
}
