package layer

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"sync"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Tree is one version of a tree of files, read by slash-separated path
// relative to the tree's top.
type Tree interface {
	Get(path string) (Version, error)
}

// MaxFile caps the bytes of one file a merge reads; a larger file is
// always a conflict.
const MaxFile = 8 << 20

// DirTree is the tree of files below Dir (relative to Root), read through
// the safe-open layer: a link or anything but a regular file is an error,
// never followed.
type DirTree struct {
	Root safefile.Root
	Dir  string
}

// Get reads path below the tree's directory.
func (t DirTree) Get(p string) (Version, error) {
	b, err := t.Root.ReadFile(path.Join(t.Dir, p), MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Absent, nil
	}
	if err != nil {
		return Absent, err
	}
	if len(b) > MaxFile {
		return Absent, errTooLarge(p)
	}
	fi, err := t.Root.Lstat(path.Join(t.Dir, p))
	if err != nil {
		return Absent, err
	}
	return Version{Data: b, Exists: true, Exec: fi.Mode().Perm()&0o100 != 0}, nil
}

type errTooLarge string

func (e errTooLarge) Error() string { return string(e) + ": larger than a merge reads" }

// Outcome is what Trees decided for one path.
type Outcome struct {
	Path string
	// Result is the version to put in effect (when Changed and not
	// Conflict).
	Result Version
	// Changed: Result differs from ours (its text or its execute bit).
	Changed bool
	// Conflict: the two sides' changes do not merge; ours stays in effect
	// and Theirs goes to review.
	Conflict bool
	// Base, Ours and Theirs are the versions merged.
	Base, Ours, Theirs Version
	// Err is why the path could not be read (a conflict).
	Err error
}

// Trees merges each of paths (those theirs changed from base) three-way:
// base is what the changed side started from, ours what is in effect now,
// theirs the changed side. by gives a path's Merger (nil: Text). Outcomes
// come sorted by path; reading a path that fails makes its outcome a
// conflict with Err set.
func Trees(paths []string, base, ours, theirs Tree, by func(path string) Merger) []Outcome {
	ps := append([]string{}, paths...)
	sort.Strings(ps)
	out := make([]Outcome, 0, len(ps))
	for _, p := range ps {
		o := Outcome{Path: p}
		var err error
		if o.Base, err = base.Get(p); err == nil {
			if o.Ours, err = ours.Get(p); err == nil {
				o.Theirs, err = theirs.Get(p)
			}
		}
		if err != nil {
			o.Conflict, o.Err = true, err
			out = append(out, o)
			continue
		}
		var m Merger
		if by != nil {
			m = by(p)
		}
		res, ok := Merge3(o.Base, o.Ours, o.Theirs, m)
		o.Conflict = !ok
		if ok {
			o.Result, o.Changed = res, !res.Equal(o.Ours) || res.Exec != o.Ours.Exec
		}
		out = append(out, o)
	}
	return out
}

// applyWorkers is how many files Apply writes at once: each atomic write
// waits for its file and directory to reach the disk, so several at once
// overlap those waits.
const applyWorkers = 8

// Apply puts each outcome that merged and changed in effect below dir
// (relative to root): Result written atomically (0755 when it is
// executable, else 0644), or the file removed (and the directories that
// leaves empty). Conflicts are left as they are.
func Apply(root safefile.Root, dir string, outs []Outcome) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan Outcome)
	for range applyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if err := apply1(root, dir, o); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, o := range outs {
		if !o.Conflict && o.Changed {
			work <- o
		}
	}
	close(work)
	wg.Wait()
	// The directories removals left empty, deepest first.
	for _, o := range outs {
		if o.Conflict || !o.Changed || o.Result.Exists {
			continue
		}
		for d := path.Dir(path.Join(dir, o.Path)); d != dir && d != "." && d != "/"; d = path.Dir(d) {
			if ents, err := root.ReadDir(d); err != nil || len(ents) > 0 || root.Remove(d) != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

func apply1(root safefile.Root, dir string, o Outcome) error {
	p := path.Join(dir, o.Path)
	if !o.Result.Exists {
		if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	return root.Write(p, o.Result.Data, Perm(o.Result.Exec))
}

// Perm is the mode a merged or approved file is written with: 0755 when
// its owner may run it, else 0644 (never setuid, setgid or sticky).
func Perm(exec bool) fs.FileMode {
	if exec {
		return 0o755
	}
	return 0o644
}
