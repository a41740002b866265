// Package safefile is the one layer through which Hobbs opens, reads,
// writes, locks and lists files of the instance directory. The agent's
// container can write parts of the instance, so nothing found there is
// trusted: a Root opens every path one component at a time without
// following a symbolic link, refuses FIFOs, sockets and devices without
// blocking on them, and confines every path beneath the root (root.go).
//
// On top of that it holds the two primitives every write of user data goes
// through: atomic replacement of a file (temp file in the same directory,
// fsync, rename, fsync of the directory) and an advisory inter-process lock
// (flock on a lock file) so that concurrent writers — several sub-agents, the
// host and the container — serialise instead of losing updates.
//
// A reader never sees a half-written file: it sees the old content or the new.
// A crash leaves at worst a stray ".tmp-*" file beside the target, never a
// truncated target.
//
// Root run against another user's files (sudo hobbs memory add on a user's
// instance) leaves none of root's there: what the layer creates beneath a
// Root whose directory another user owns goes to that user and group
// (root.go, heir).
package safefile

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"
)

// The package-level functions below work on a path's own directory: they
// refuse a link or special file as the last component but trust the
// directories above it. Paths inside the instance go through the instance's
// Root (instance.Instance.FS), which trusts no component below the root.

// Write atomically replaces path with data, created with perm.
func Write(path string, data []byte, perm fs.FileMode) error {
	return Beneath(filepath.Dir(path)).Write(filepath.Base(path), data, perm)
}

// Append appends line to path under its lock (Root.Append).
func Append(path string, line []byte, perm fs.FileMode) error {
	return Beneath(filepath.Dir(path)).Append(filepath.Base(path), line, perm)
}

// AppendCount is Root.AppendCount on path's directory.
func AppendCount(path string, line []byte, perm fs.FileMode) (int, error) {
	return Beneath(filepath.Dir(path)).AppendCount(filepath.Base(path), line, perm)
}

// ErrLockTimeout is returned by Lock when the lock is still held after the
// timeout.
var ErrLockTimeout = errors.New("timed out waiting for lock")

// Lock takes an exclusive advisory lock on lockPath (Root.Lock).
func Lock(lockPath string, timeout time.Duration) (unlock func(), err error) {
	return Beneath(filepath.Dir(lockPath)).Lock(filepath.Base(lockPath), timeout)
}
