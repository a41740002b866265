//go:build unix

package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ctimeTrusted is trustsCtime (a test may pretend otherwise).
var ctimeTrusted = trustsCtime

// ErrTooMany is what Scan reports for a tree with more directories than it
// walks.
var ErrTooMany = errors.New("too many directories")

// ScanLimits bounds a Scan: MaxDepth is how many levels below its
// directory it descends, MaxDirs how many directories it lists (its own
// included).
type ScanLimits struct {
	MaxDepth, MaxDirs int
	// First, if set, names directories (paths relative to the scanned
	// one) walked before their siblings, so that MaxDirs never leaves
	// them out for directories listed before them.
	First func(rel string) bool
	// Defer, if set, names directories walked after all the others
	// (each listed by its path, below it in the same order), so that
	// MaxDirs leaves out those first.
	Defer func(rel string) bool
}

// Entry is an entry a Scan kept: its path (slash-separated, relative to
// the scanned directory) and its type as the directory lists it
// (fs.ModeSymlink, fs.ModeNamedPipe, …; 0 for a regular file).
type Entry struct {
	Rel  string
	Type fs.FileMode
}

// DirIndex is what a Scan keeps of a tree to walk it again cheaply: each
// directory's inode and change time, its subdirectories and the entries
// it kept there.
type DirIndex struct {
	dirs     map[string]*indexDir
	unwalked []string
}

// Has reports whether the Scan that made x walked the directory rel.
func (x *DirIndex) Has(rel string) bool {
	_, ok := x.dirs[rel]
	return ok
}

// Unwalked are the directories the Scan that made x did not walk, being
// beyond its limits (their parents were walked), in the order it met
// them. An index decoded from its encoding has none.
func (x *DirIndex) Unwalked() []string { return x.unwalked }

type indexDir struct {
	ino     uint64
	ctime   int64 // ns
	racy    bool  // changed too close to its listing to be trusted unlisted
	subdirs []string
	kept    []Entry // names only (Rel is the entry's name)
}

// racySlop: a directory whose change time is this close to (or after)
// the start of the walk that listed it is listed again by the next walk,
// whatever its change time then: a change made while it was listed may
// carry the same time (timestamps are as coarse as the kernel's clock
// tick or the file system's granularity).
var racySlop = 2 * time.Second

// Scan walks the tree below the directory dir, never following a link:
// it returns every entry (not a directory) for which keep says so, and
// the index of the tree for the next Scan. It descends into every
// directory; each directory is opened relative to the one above it with
// O_NOFOLLOW and listed (one getdents, its entries' types as it lists
// them, no stat) — except, given prev (a Scan's index of the same tree),
// a directory whose inode and change time are what prev recorded: its
// entries cannot have changed (adding, removing or renaming an entry, or
// swapping a directory for a link, changes its directory's change time,
// which no process can set back), so prev's listing of it is used and only
// it is stat'ed. A tree that did not change costs one stat a directory.
// prev serves only on a local file system known to keep change times so
// (ext4, XFS, Btrfs, tmpfs, F2FS, ZFS; APFS, HFS+) and only for the
// directories on the same one as dir (not below a mount point).
//
// Directories beyond lim and those it could not list are not walked: once
// the rest is, they are reported in the error (ErrTooDeep, ErrTooMany
// naming the first one and how many, each listing's error), with the
// index and what was found.
func (r Root) Scan(dir string, lim ScanLimits, prev *DirIndex, keep func(rel string) bool) (*DirIndex, []Entry, error) {
	rel, err := r.rel(dir)
	if err != nil {
		return nil, nil, err
	}
	s := &scan{r: r, top: rel, lim: lim, keep: keep, idx: &DirIndex{dirs: map[string]*indexDir{}}, start: time.Now().Add(-racySlop).UnixNano()}
	var top unix.Stat_t
	if prev != nil && unix.Lstat(r.abs(rel), &top) == nil && ctimeTrusted(r.abs(rel)) {
		s.prev, s.dev = prev.dirs, uint64(top.Dev)
	}
	s.visit(-1, "", ".", 0)
	for len(s.deferred) > 0 {
		d := s.deferred[0]
		s.deferred = s.deferred[1:]
		if s.listed >= lim.MaxDirs {
			s.beyond(d.rel)
			continue
		}
		s.listAndVisit(-1, "", d.rel, s.r.abs(filepath.Join(s.top, d.rel)), d.depth)
	}
	if s.tooDeep > 0 {
		s.errs = append(s.errs, fmt.Errorf("%w: %s and %d more directories are more than %d levels below %s, not walked", ErrTooDeep, s.firstDeep, s.tooDeep-1, lim.MaxDepth, r.abs(rel)))
	}
	if s.tooMany > 0 {
		s.errs = append(s.errs, fmt.Errorf("%w: %s and %d more directories below %s are beyond the first %d, not walked", ErrTooMany, s.firstMany, s.tooMany-1, r.abs(rel), lim.MaxDirs))
	}
	return s.idx, s.found, errors.Join(s.errs...)
}

type scan struct {
	r                    Root
	top                  string
	lim                  ScanLimits
	keep                 func(string) bool
	prev                 map[string]*indexDir
	dev                  uint64 // the file system of prev's directories
	idx                  *DirIndex
	start                int64
	found                []Entry
	errs                 []error
	listed               int
	tooDeep, tooMany     int
	firstDeep, firstMany string
	deferred             []deferredDir
}

type deferredDir struct {
	rel   string
	depth int
}

// beyond records the directory rel as not walked: beyond MaxDirs.
func (s *scan) beyond(rel string) {
	if s.tooMany++; s.tooMany == 1 {
		s.firstMany = rel
	}
	s.idx.unwalked = append(s.idx.unwalked, rel)
}

// visit walks the directory rel: name in the open directory parent, or
// (parent -1) reached by its path.
func (s *scan) visit(parent int, name, rel string, depth int) {
	full := s.r.abs(filepath.Join(s.top, rel))
	d := s.prev[rel]
	if d == nil {
		s.listAndVisit(parent, name, rel, full, depth)
		return
	}
	var st unix.Stat_t
	var err error
	if parent >= 0 {
		err = unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	} else {
		// By path: each directory above was listed (or found unchanged)
		// just before, so a component swapped for a link since the last
		// walk was seen there and this one was not reached.
		err = unix.Lstat(full, &st)
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return // removed meanwhile
	case err != nil:
		s.errs = append(s.errs, &fs.PathError{Op: "lstat", Path: full, Err: err})
		return
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return // swapped meanwhile: its parent lists it next time
	}
	if d.racy || d.ino != st.Ino || d.ctime != st.Ctim.Nano() || uint64(st.Dev) != s.dev {
		s.listAndVisit(parent, name, rel, full, depth)
		return
	}
	s.listed++
	s.descend(-1, rel, d, depth)
}

// listAndVisit lists the directory rel and walks what is below it.
func (s *scan) listAndVisit(parent int, name, rel, full string, depth int) {
	s.listed++
	d, f, err := s.list(parent, name, rel, full)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // removed meanwhile
			s.errs = append(s.errs, err)
		}
		return
	}
	defer f.Close()
	s.descend(int(f.Fd()), rel, d, depth)
}

// descend records the directory rel (d; open as fd, or -1) and walks its
// subdirectories.
func (s *scan) descend(fd int, rel string, d *indexDir, depth int) {
	s.idx.dirs[rel] = d
	for _, e := range d.kept {
		s.found = append(s.found, Entry{Rel: path.Join(rel, e.Rel), Type: e.Type})
	}
	subdirs := d.subdirs
	if s.lim.First != nil {
		subdirs = make([]string, 0, len(d.subdirs))
		for _, first := range []bool{true, false} {
			for _, n := range d.subdirs {
				if s.lim.First(path.Join(rel, n)) == first {
					subdirs = append(subdirs, n)
				}
			}
		}
	}
	for _, n := range subdirs {
		p := path.Join(rel, n)
		switch {
		case depth >= s.lim.MaxDepth:
			if s.tooDeep++; s.tooDeep == 1 {
				s.firstDeep = p
			}
			s.idx.unwalked = append(s.idx.unwalked, p)
		case s.lim.Defer != nil && s.lim.Defer(p):
			s.deferred = append(s.deferred, deferredDir{p, depth + 1})
		case s.listed >= s.lim.MaxDirs:
			s.beyond(p)
		default:
			s.visit(fd, n, p, depth+1)
		}
	}
}

// list opens and lists the directory rel, and returns it open.
func (s *scan) list(parent int, name, rel, full string) (*indexDir, *os.File, error) {
	var f *os.File
	if parent >= 0 {
		fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(parent, name, dirFlags, 0) })
		if err != nil {
			return nil, nil, s.r.explain(parent, name, full, "open", err, true)
		}
		f = os.NewFile(uintptr(fd), full)
	} else {
		var err error
		if f, err = s.r.OpenDir(filepath.Join(s.top, rel)); err != nil {
			return nil, nil, err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "readdir", Path: full, Err: err}
	}
	d := &indexDir{ino: st.Ino, ctime: st.Ctim.Nano(), racy: st.Ctim.Nano() >= s.start}
	for _, e := range ents {
		switch p := path.Join(rel, e.Name()); {
		case e.Type().IsDir():
			d.subdirs = append(d.subdirs, e.Name())
		case s.keep(p):
			d.kept = append(d.kept, Entry{Rel: e.Name(), Type: e.Type()})
		}
	}
	return d, f, nil
}

// MarshalBinary encodes the index: fields ended by NUL, which no name
// holds.
func (x *DirIndex) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("dirindex1\x00")
	for rel, d := range x.dirs {
		racy := "0"
		if d.racy {
			racy = "1"
		}
		fmt.Fprintf(&b, "D\x00%s\x00%d\x00%d\x00%s\x00", rel, d.ino, d.ctime, racy)
		for _, n := range d.subdirs {
			b.WriteString("S\x00" + n + "\x00")
		}
		for _, e := range d.kept {
			fmt.Fprintf(&b, "K\x00%s\x00%d\x00", e.Rel, uint32(e.Type))
		}
	}
	return b.Bytes(), nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (x *DirIndex) UnmarshalBinary(b []byte) error {
	f := bytes.Split(b, []byte{0})
	if len(f) == 0 || string(f[0]) != "dirindex1" {
		return errors.New("not a directory index")
	}
	x.dirs = map[string]*indexDir{}
	var d *indexDir
	bad := errors.New("a damaged directory index")
	for i := 1; i < len(f)-1; {
		switch string(f[i]) {
		case "D":
			if i+5 > len(f) {
				return bad
			}
			ino, err1 := strconv.ParseUint(string(f[i+2]), 10, 64)
			ct, err2 := strconv.ParseInt(string(f[i+3]), 10, 64)
			if err1 != nil || err2 != nil {
				return bad
			}
			d = &indexDir{ino: ino, ctime: ct, racy: string(f[i+4]) == "1"}
			x.dirs[string(f[i+1])] = d
			i += 5
		case "S":
			if d == nil || i+2 > len(f) {
				return bad
			}
			d.subdirs = append(d.subdirs, string(f[i+1]))
			i += 2
		case "K":
			if d == nil || i+3 > len(f) {
				return bad
			}
			t, err := strconv.ParseUint(string(f[i+2]), 10, 32)
			if err != nil {
				return bad
			}
			d.kept = append(d.kept, Entry{Rel: string(f[i+1]), Type: fs.FileMode(t)})
			i += 3
		default:
			return bad
		}
	}
	return nil
}

// Readlink returns the text of the link at path (no link followed on the
// way, nor the link itself).
func (r Root) Readlink(path string) (string, error) {
	dirfd, name, rel, err := r.leaf(path)
	if err != nil {
		return "", err
	}
	defer unix.Close(dirfd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: r.abs(rel), Err: err}
	}
	return string(buf[:n]), nil
}
