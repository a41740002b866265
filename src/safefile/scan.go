//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// ErrTooMany is what Scan reports for a tree with more directories than it
// walks.
var ErrTooMany = errors.New("too many directories")

// ScanLimits bounds a Scan: MaxDepth is how many levels below its
// directory it descends, MaxDirs how many directories it opens (its own
// included).
type ScanLimits struct {
	MaxDepth, MaxDirs int
}

// Scan walks the tree below the directory dir and calls visit with the
// path of every entry (slash-separated, relative to dir) and its type as
// the directory lists it (fs.ModeDir, fs.ModeSymlink, …; 0 for a regular
// file). It descends into every directory unless visit returns fs.SkipDir
// for it; any other error from visit ends the walk with that error. A
// directory it cannot open (removed meanwhile is not reported) is given to
// visit a second time with the error, which visit may return or not.
//
// It follows no link, opens each directory relative to the one above it
// with O_NOFOLLOW, and stats no entry, so a tree of many files costs one
// open and one getdents a directory. Directories beyond lim are not
// walked: once the rest is, they are reported by an error wrapping
// ErrTooDeep or ErrTooMany, naming the first one and how many.
func (r Root) Scan(dir string, lim ScanLimits, visit func(rel string, typ fs.FileMode, err error) error) error {
	d, err := r.OpenDir(dir)
	if err != nil {
		return err
	}
	s := scan{lim: lim, visit: visit, opened: 1}
	if err := s.dir(d, ".", 0); err != nil {
		return err
	}
	var out []error
	if s.tooDeep > 0 {
		out = append(out, fmt.Errorf("%w: %s and %d more directories are more than %d levels below %s, not walked", ErrTooDeep, s.firstDeep, s.tooDeep-1, lim.MaxDepth, r.abs(mustRel(r, dir))))
	}
	if s.tooMany > 0 {
		out = append(out, fmt.Errorf("%w: %s and %d more directories below %s are beyond the first %d, not walked", ErrTooMany, s.firstMany, s.tooMany-1, r.abs(mustRel(r, dir)), lim.MaxDirs))
	}
	return errors.Join(out...)
}

type scan struct {
	lim                  ScanLimits
	visit                func(string, fs.FileMode, error) error
	opened               int
	tooDeep, tooMany     int
	firstDeep, firstMany string
}

// dir scans the open directory d (rel, depth levels down; closed on return).
func (s *scan) dir(d *os.File, rel string, depth int) error {
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return s.visit(rel, fs.ModeDir, &fs.PathError{Op: "readdir", Path: d.Name(), Err: err})
	}
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		typ := e.Type()
		if err := s.visit(p, typ, nil); errors.Is(err, fs.SkipDir) || err == nil && !typ.IsDir() {
			continue
		} else if err != nil {
			return err
		}
		switch {
		case depth >= s.lim.MaxDepth:
			if s.tooDeep++; s.tooDeep == 1 {
				s.firstDeep = p
			}
			continue
		case s.opened >= s.lim.MaxDirs:
			if s.tooMany++; s.tooMany == 1 {
				s.firstMany = p
			}
			continue
		}
		fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(int(d.Fd()), e.Name(), dirFlags, 0) })
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			if err := s.visit(p, typ, explainAt(int(d.Fd()), e.Name(), path.Join(d.Name(), e.Name()), err)); err != nil && !errors.Is(err, fs.SkipDir) {
				return err
			}
			continue
		}
		s.opened++
		if err := s.dir(os.NewFile(uintptr(fd), path.Join(d.Name(), e.Name())), p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// explainAt is Root.explain for a directory to open.
func explainAt(dirfd int, name, full string, err error) error {
	return Root{}.explain(dirfd, name, full, "open", err, true)
}
