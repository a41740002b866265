package memory

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Everything under memory/ is written by the agent's container too, so this
// package opens, reads, lists, locks and writes it only through the
// instance's safefile.Root: no link is followed, no FIFO, socket or device is
// opened (nothing blocks on one), and a file shrinking while it is read is a
// short read, never a crash (no file is mapped into memory). An entry that
// fails these rules is a Problem naming it; the operation skips it and
// carries on, and never writes through it.

// MaxFileSize is the largest memory file read: a bigger one is a Problem
// (a memory is a few lines; this only stops a planted giant file from
// exhausting the host's memory).
var MaxFileSize int64 = instance.MaxMemoryFile

// maxIndexSize bounds an index file read (a larger one is ignored and
// rebuilt in memory).
var maxIndexSize int64 = 1 << 30

// fs is the safe-open layer of the store's instance.
func (s *Store) fs() safefile.Root { return s.In.FS() }

// tooLargeError is a file over the size limit.
type tooLargeError = safefile.TooLargeError

// readLimited reads the regular file path through root, at most max bytes
// (a larger file is a *tooLargeError). A file that shrinks while it is read
// gives what could be read.
func readLimited(root safefile.Root, path string, max int64) ([]byte, error) {
	return root.ReadFile(path, max)
}

// readMemFile reads one memory file.
func readMemFile(root safefile.Root, path string) ([]byte, error) {
	return readLimited(root, path, MaxFileSize)
}

// unsafeEntry is the refusal of the entry at path of type m.
func unsafeEntry(path string, m fs.FileMode) *safefile.UnsafeError {
	return safefile.NotRegular(path, m)
}

// problemOf is the Problem of a file that could not be read. An
// UnsafeError names the entry refused (which may be a directory above
// path).
func problemOf(path string, err error) Problem {
	var ue *safefile.UnsafeError
	if errors.As(err, &ue) {
		return Problem{Path: ue.Path, Reason: strings.TrimPrefix(ue.Error(), ue.Path+" ")}
	}
	var tl *tooLargeError
	if errors.As(err, &tl) {
		return Problem{Path: tl.Path, Reason: strings.TrimPrefix(tl.Error(), tl.Path+" ")}
	}
	return Problem{Path: path, Reason: err.Error()}
}

// unsafe reports whether err is a refusal of the safe-open layer or a file
// over the size limit: the entry is there but must not be used.
func unsafe(err error) bool {
	var tl *tooLargeError
	return errors.Is(err, safefile.ErrUnsafe) || errors.As(err, &tl)
}

// checkShared reports, once per store, the files of memory/ other than the
// memories that are not what hobbs keeps there: history.jsonl and the lock
// files must be regular files (or missing), .index a directory of regular
// files. Those it finds are refused where they are used; this names them
// for every command, so that list, search or lint show what a later write
// would refuse.
func (s *Store) checkShared() {
	if s.sharedChecked {
		return
	}
	s.sharedChecked = true
	root, dir := s.fs(), s.In.MemoryDir()
	for _, name := range []string{"history.jsonl", "history.jsonl.lock", ".lock"} {
		p := filepath.Join(dir, name)
		fi, err := root.Lstat(p)
		switch {
		case err == nil && !fi.Mode().IsRegular():
			s.report(problemOf(p, unsafeEntry(p, fi.Mode())))
		case err != nil && unsafe(err):
			s.report(problemOf(p, err))
		}
	}
	idx := s.In.MemoryIndex()
	fi, err := root.Lstat(idx)
	switch {
	case err == nil && !fi.IsDir():
		ue := unsafeEntry(idx, fi.Mode())
		if fi.Mode().IsRegular() {
			ue.Why = "is a file, not a directory"
		}
		s.report(problemOf(idx, ue))
	case err == nil:
		ents, err := root.ReadDir(idx)
		if err != nil {
			if unsafe(err) {
				s.report(problemOf(idx, err))
			}
			return
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				p := filepath.Join(idx, e.Name())
				s.report(problemOf(p, unsafeEntry(p, e.Type())))
			}
		}
	case unsafe(err):
		s.report(problemOf(idx, err))
	}
}
