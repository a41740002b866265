// Package safefile holds the two primitives every write of user data goes
// through: atomic replacement of a file (temp file in the same directory,
// fsync, rename, fsync of the directory) and an advisory inter-process lock
// (flock on a lock file) so that concurrent writers — several sub-agents, the
// host and the container — serialise instead of losing updates.
//
// A reader never sees a half-written file: it sees the old content or the new.
// A crash leaves at worst a stray ".tmp-*" file beside the target, never a
// truncated target.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Write atomically replaces path with data, created with perm.
func Write(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// Create atomically creates path with data and fails with an error satisfying
// errors.Is(err, fs.ErrExist) if path already exists. Content is complete the
// moment the name appears.
func Create(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
		}
		return err
	}
	return syncDir(filepath.Dir(path))
}

func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, ".tmp-"+base+"-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return name, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some filesystems refuse fsync on directories; the rename is still atomic.
	_ = d.Sync()
	return nil
}

// Append writes line to the end of path (created with perm if missing) in a
// single write(2) with O_APPEND, under the file's lock, so that concurrent
// appenders never interleave within a line.
func Append(path string, line []byte, perm fs.FileMode) error {
	_, err := AppendCount(path, line, perm)
	return err
}

// AppendCount is Append that also returns how many bytes of line reached
// the file: a write that fails part way (a full disk) may have written some,
// and a caller that retries must not write them twice.
func AppendCount(path string, line []byte, perm fs.FileMode) (int, error) {
	unlock, err := Lock(path+".lock", 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(line)
	if err != nil {
		f.Close()
		return n, err
	}
	return n, f.Close()
}

// ErrLockTimeout is returned by Lock when the lock is still held after the
// timeout.
var ErrLockTimeout = errors.New("timed out waiting for lock")

// Lock takes an exclusive advisory lock on lockPath (created if missing),
// waiting up to timeout (0 waits forever). The returned function releases it.
// The lock is released by the kernel if the process dies.
func Lock(lockPath string, timeout time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", lockPath, err)
		}
		if ok {
			return func() { unlockFile(f); f.Close() }, nil
		}
		if timeout > 0 && time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", lockPath, ErrLockTimeout)
		}
		time.Sleep(delay)
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}
