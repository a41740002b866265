package layer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Mode is how a layer is given to the agent.
type Mode string

const (
	// Overlay: the engine mounts an overlay filesystem (lower: the
	// snapshot, upper: the layer's changes); the upper directory holds
	// exactly what the session changed.
	Overlay Mode = "overlay"
	// Copy: where no overlay can be mounted the agent gets a copy of the
	// snapshot, bound; the changes are what differs from the snapshot.
	Copy Mode = "copy"
)

// Layer is one share's private layer for one session, in Dir (relative to
// Root, host-only):
//
//	Dir/lower  the share as the session started from it: hard links to the
//	           files then in effect, which the host only ever replaces (an
//	           atomic rename), never rewrites in place; read-only to the agent
//	Dir/upper  overlay: the session's changes; copy: the agent's whole copy
//
// Overlay also needs a work directory on the same filesystem (Work).
type Layer struct {
	Root  safefile.Root
	Share string // the share, relative to Root
	Dir   string
	Work  string // overlay's work directory, relative to Root
	Mode  Mode
}

// Lower and Upper are the layer's directories, relative to Root.
func (l *Layer) Lower() string { return path.Join(l.Dir, "lower") }
func (l *Layer) Upper() string { return path.Join(l.Dir, "upper") }

func (l *Layer) abs(rel string) string { return filepath.Join(l.Root.Dir(), filepath.FromSlash(rel)) }

// MountOptions is the overlay mount's option string (o=): the snapshot
// under the changes. userxattr keeps overlay's own attributes (an opaque
// directory) in the user namespace, where the host, not root, reads them.
func (l *Layer) MountOptions() string {
	return "lowerdir=" + l.abs(l.Lower()) + ",upperdir=" + l.abs(l.Upper()) + ",workdir=" + l.abs(l.Work) + ",userxattr"
}

// Create makes the layer: the snapshot of the share (regular files and
// directories only; anything else in the share is not given to the
// session), the upper directory (for Copy, a copy of the snapshot) and the
// work directory. A lower directory already in place (a recycled snapshot,
// Recycle) is brought up to date. A missing share is an empty snapshot.
func Create(root safefile.Root, share, dir, work string, mode Mode) (*Layer, error) {
	l := &Layer{Root: root, Share: share, Dir: dir, Work: work, Mode: mode}
	if err := root.MkdirAll(l.Upper(), 0o755); err != nil {
		return nil, err
	}
	if mode == Overlay {
		if err := root.MkdirAll(work, 0o700); err != nil {
			return nil, err
		}
	}
	if err := root.MkdirAll(l.Lower(), 0o755); err != nil {
		return nil, err
	}
	lower := l.abs(l.Lower())
	err := syncSnapshot(l.abs(share), lower, func(from, to string) error {
		err := unix.Linkat(unix.AT_FDCWD, from, unix.AT_FDCWD, to, 0)
		if errors.Is(err, unix.EXDEV) {
			// A share on another file system (a mount of its own): a copy,
			// which a later snapshot replaces (its inode is not the
			// share's).
			fi, serr := os.Lstat(from)
			if serr != nil {
				return serr
			}
			return copyFile(from, to, fi)
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot %s: %w", share, err)
	}
	if mode == Copy {
		up := l.abs(l.Upper())
		err := snapshot(lower, up, func(from, to string, fi fs.FileInfo) error {
			return copyFile(from, to, fi)
		}, func(string) error { return nil })
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", share, err)
		}
	}
	return l, nil
}

// Recycle moves the layer's snapshot to to (relative to Root), for a later
// layer of the same share to bring up to date rather than make anew.
func (l *Layer) Recycle(to string) error {
	return os.Rename(l.abs(l.Lower()), l.abs(to))
}

// snapshot mirrors the tree at src into dst: directories made (and
// mkdir called for each), regular files given to file; links and other
// entries are left out.
func snapshot(src, dst string, file func(from, to string, fi fs.FileInfo) error, mkdir func(to string) error) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		switch {
		case e.Type().IsDir():
			if err := os.Mkdir(to, 0o755); err != nil {
				return err
			}
			if err := mkdir(to); err != nil {
				return err
			}
			if err := snapshot(from, to, file, mkdir); err != nil {
				return err
			}
		case e.Type().IsRegular():
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if err := file(from, to, fi); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string, fi fs.FileInfo) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, fi.Mode().Perm())
}

// Change is one path the session changed, relative to the share.
type Change struct {
	Path    string
	Removed bool
	// Bad says why the entry cannot be taken (a link, a device): it is a
	// conflict whatever the other side holds.
	Bad string
}

// Changes lists the session's changes, sorted: for Overlay the upper
// directory's entries (a whiteout is a removal, an opaque directory
// removes what the snapshot has below it), for Copy what differs from the
// snapshot.
func (l *Layer) Changes() ([]Change, error) {
	var out []Change
	var err error
	if l.Mode == Copy {
		out, err = diffTrees(l.abs(l.Lower()), l.abs(l.Upper()), "")
	} else {
		out, err = l.upperChanges(l.abs(l.Upper()), l.abs(l.Lower()), "")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

func (l *Layer) upperChanges(up, low, rel string) ([]Change, error) {
	ents, err := os.ReadDir(up)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, e := range ents {
		p, u, w := path.Join(rel, e.Name()), filepath.Join(up, e.Name()), filepath.Join(low, e.Name())
		fi, err := os.Lstat(u)
		if err != nil {
			return nil, err
		}
		lfi, lerr := os.Lstat(w)
		lowerDir := lerr == nil && lfi.IsDir()
		switch m := fi.Mode(); {
		case m.IsRegular():
			if lowerDir {
				out = append(out, allFiles(w, p, true)...)
			}
			out = append(out, Change{Path: p})
		case m&fs.ModeCharDevice != 0 && whiteout(fi):
			if lowerDir {
				out = append(out, allFiles(w, p, true)...)
			} else if lerr == nil {
				out = append(out, Change{Path: p, Removed: true})
			}
		case m.IsDir():
			if lerr == nil && !lowerDir {
				out = append(out, Change{Path: p, Removed: true})
			}
			sub, err := l.upperChanges(u, w, p)
			if err != nil {
				return nil, err
			}
			if lowerDir && opaque(u) {
				in := map[string]bool{}
				for _, c := range sub {
					in[c.Path] = true
				}
				for _, c := range allFiles(w, p, true) {
					if !in[c.Path] {
						sub = append(sub, c)
					}
				}
			}
			out = append(out, sub...)
		default:
			out = append(out, Change{Path: p, Bad: "not a regular file (" + m.Type().String() + ")"})
		}
	}
	return out, nil
}

// whiteout reports whether fi is overlay's mark of a removal: a character
// device 0:0.
func whiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0
}

// opaque reports whether overlay marked the upper directory dir opaque
// (made anew where a directory was removed: nothing below it in the
// snapshot shows through).
func opaque(dir string) bool {
	buf := make([]byte, 4)
	for _, a := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		if n, err := unix.Lgetxattr(dir, a, buf); err == nil && n > 0 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// allFiles lists the regular files below dir as changes below rel.
func allFiles(dir, rel string, removed bool) []Change {
	var out []Change
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		switch {
		case e.Type().IsDir():
			out = append(out, allFiles(filepath.Join(dir, e.Name()), p, removed)...)
		case e.Type().IsRegular():
			out = append(out, Change{Path: p, Removed: removed})
		}
	}
	return out
}

// diffTrees lists what differs between the trees a (before) and b (after).
func diffTrees(a, b, rel string) ([]Change, error) {
	var out []Change
	ae, _ := os.ReadDir(a)
	be, err := os.ReadDir(b)
	if err != nil {
		return nil, err
	}
	inB := map[string]fs.DirEntry{}
	for _, e := range be {
		inB[e.Name()] = e
	}
	for _, e := range ae {
		p := path.Join(rel, e.Name())
		if _, ok := inB[e.Name()]; !ok {
			if e.IsDir() {
				out = append(out, allFiles(filepath.Join(a, e.Name()), p, true)...)
			} else {
				out = append(out, Change{Path: p, Removed: true})
			}
		}
	}
	inA := map[string]fs.DirEntry{}
	for _, e := range ae {
		inA[e.Name()] = e
	}
	for _, e := range be {
		p := path.Join(rel, e.Name())
		x, had := inA[e.Name()]
		switch {
		case e.Type().IsDir():
			if had && !x.IsDir() {
				out = append(out, Change{Path: p, Removed: true})
			}
			sub, err := diffTrees(filepath.Join(a, e.Name()), filepath.Join(b, e.Name()), p)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		case e.Type().IsRegular():
			if had && x.IsDir() {
				out = append(out, allFiles(filepath.Join(a, e.Name()), p, true)...)
			}
			if !had || !x.Type().IsRegular() || !sameFile(filepath.Join(a, e.Name()), filepath.Join(b, e.Name())) {
				out = append(out, Change{Path: p})
			}
		default:
			out = append(out, Change{Path: p, Bad: "not a regular file (" + e.Type().String() + ")"})
		}
	}
	return out, nil
}

func sameFile(a, b string) bool {
	fa, err1 := os.Lstat(a)
	fb, err2 := os.Lstat(b)
	if err1 != nil || err2 != nil || fa.Size() != fb.Size() || (fa.Mode().Perm()^fb.Mode().Perm())&0o100 != 0 {
		return false
	}
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// Base is the tree the session started from.
func (l *Layer) Base() Tree { return DirTree{Root: l.Root, Dir: l.Lower()} }

// Theirs is the session's version of the paths of changes (what Changes
// returned): the upper's file, or no file for a removal.
func (l *Layer) Theirs(changes []Change) Tree {
	removed := map[string]bool{}
	for _, c := range changes {
		if c.Removed {
			removed[c.Path] = true
		}
	}
	return theirs{DirTree{Root: l.Root, Dir: l.Upper()}, removed}
}

type theirs struct {
	DirTree
	removed map[string]bool
}

func (t theirs) Get(p string) (Version, error) {
	if t.removed[p] {
		return Absent, nil
	}
	return t.DirTree.Get(p)
}

// Discard removes the layer's directory (the overlay must be unmounted).
func (l *Layer) Discard() error { return os.RemoveAll(l.abs(l.Dir)) }

// BaseSince is Base, except that a file of the snapshot modified at or
// after made (the moment the snapshot was complete) is an error (its
// modification time, not its change time: replacing the file in effect by
// rename changes the snapshot's link count, and so its change time): the file in effect was rewritten in place rather than replaced, so
// the snapshot, which links it, no longer holds what the session started
// from, and a merge against it could take the rewrite for the base and
// drop it. Trees makes such a path a conflict.
func (l *Layer) BaseSince(made time.Time) Tree {
	return sinceTree{DirTree{Root: l.Root, Dir: l.Lower()}, made}
}

type sinceTree struct {
	DirTree
	made time.Time
}

func (t sinceTree) Get(p string) (Version, error) {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(t.Root.Dir(), filepath.FromSlash(path.Join(t.Dir, p))), &st); err == nil &&
		!time.Unix(st.Mtim.Unix()).Before(t.made) {
		return Absent, fmt.Errorf("%s: rewritten in place during the session (its snapshot changed with it)", p)
	}
	return t.DirTree.Get(p)
}
