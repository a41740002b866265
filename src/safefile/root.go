//go:build unix

package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Root is a directory beneath which every path is opened one component at a
// time, relative to the directory opened before it, with O_NOFOLLOW: a
// symbolic link in any component below the root is refused, never followed,
// and a directory swapped for a link after an earlier step does not matter
// (each step holds the directory it opened). The last component must be a
// regular file (or, where the call says so, a directory): a FIFO, socket or
// device is refused without blocking (O_NONBLOCK, then fstat).
//
// The root's own path is the caller's to trust (the user may keep the
// instance on a linked disk); the instance's paths below it are not: the
// agent's container can write some of them.
//
// Paths given to a Root's methods are absolute paths beneath it or paths
// relative to it; anything that leads outside is refused.
type Root struct {
	dir string
}

// Beneath returns the Root for dir (made absolute).
func Beneath(dir string) Root {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return Root{dir: filepath.Clean(dir)}
}

// Dir is the root's directory.
func (r Root) Dir() string { return r.dir }

// ErrUnsafe is what every refusal of this layer wraps: a symbolic link where
// a path component should be, a file of the wrong type, a path outside the
// root.
var ErrUnsafe = errors.New("unsafe path")

// UnsafeError names the path refused and why.
type UnsafeError struct {
	Path string // absolute
	Why  string // "is a symbolic link", "is a FIFO, not a regular file", …
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s %s (hobbs never follows links or opens special files in the instance: inspect it, then move or remove it)", e.Path, e.Why)
}

func (e *UnsafeError) Unwrap() error { return ErrUnsafe }

// rel turns p into a clean path relative to the root ("." for the root).
func (r Root) rel(p string) (string, error) {
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(r.dir, filepath.Clean(p))
		if err != nil {
			return "", &UnsafeError{Path: p, Why: "is outside " + r.dir}
		}
		p = rel
	}
	p = filepath.Clean(p)
	if p == "." {
		return p, nil
	}
	if !filepath.IsLocal(p) {
		return "", &UnsafeError{Path: filepath.Join(r.dir, p), Why: "is outside " + r.dir}
	}
	return p, nil
}

func (r Root) abs(rel string) string { return filepath.Join(r.dir, rel) }

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openRoot opens the root directory itself (following links in its own
// path: that path is the user's choice).
func (r Root) openRoot() (int, error) {
	fd, err := ignoringEINTR(func() (int, error) {
		return unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: r.dir, Err: err}
	}
	return fd, nil
}

// openDirAt opens directory name in dirfd without following a link. create
// makes it (perm) when missing.
func (r Root) openDirAt(dirfd int, name, full string, create bool, perm fs.FileMode) (int, error) {
	made := false
	for try := 0; ; try++ {
		fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, dirFlags, 0) })
		if err == nil {
			if made {
				if err := r.giveMade(fd, full); err != nil {
					unix.Close(fd)
					return -1, err
				}
			}
			return fd, nil
		}
		if errors.Is(err, unix.ENOENT) && create && try < 2 {
			merr := unix.Mkdirat(dirfd, name, uint32(perm.Perm()))
			if merr != nil && !errors.Is(merr, unix.EEXIST) {
				return -1, &fs.PathError{Op: "mkdir", Path: full, Err: merr}
			}
			made = merr == nil
			continue
		}
		return -1, r.explain(dirfd, name, full, "open", err, true)
	}
}

// Ownership. A process running as root (sudo hobbs memory add, an
// administrator's shell) that writes beneath another user's root must not
// leave files that user cannot change: every file and directory this layer
// creates then goes to the owner (uid and gid) of the root directory.
// Only what this layer itself just made is handed over — a directory it
// made with mkdirat, a file it created with O_EXCL — so no entry placed
// there by someone else (a hard link to a file of root's, say) is ever
// given away.

// heir returns the uid and gid that what this layer creates must get, and
// ok=false when nothing is to be handed over: the process is not root, or
// the root directory is root's own.
func (r Root) heir() (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	var st unix.Stat_t
	if err := unix.Stat(r.dir, &st); err != nil || st.Uid == 0 {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// giveMade hands fd, which this layer has just created, to the root's
// owner (see heir). A directory made by mkdirat is checked to be still
// ours (uid 0) before it is given: an entry swapped into its place is left
// as it is.
func (r Root) giveMade(fd int, full string) error {
	uid, gid, ok := r.heir()
	if !ok {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	if st.Uid != 0 {
		return nil
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return &fs.PathError{Op: "chown", Path: full, Err: err}
	}
	return nil
}

// explain turns an openat failure into an error: an UnsafeError when the
// entry is a link or of the wrong type, else a PathError.
func (r Root) explain(dirfd int, name, full, op string, err error, wantDir bool) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EMLINK) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if why := typeProblem(uint32(st.Mode), wantDir, !wantDir); why != "" {
				return &UnsafeError{Path: full, Why: why}
			}
		}
	}
	return &fs.PathError{Op: op, Path: full, Err: err}
}

// typeProblem says what is wrong with an entry of mode m, or "".
func typeProblem(m uint32, dirOK, fileOK bool) string {
	return modeProblem(fileMode(m), dirOK, fileOK)
}

// modeProblem says what is wrong with an entry of mode m, or "".
func modeProblem(m fs.FileMode, dirOK, fileOK bool) string {
	switch t := m.Type(); {
	case t == 0:
		if fileOK {
			return ""
		}
		return "is a file, not a directory"
	case t == fs.ModeDir:
		if dirOK {
			return ""
		}
		return "is a directory, not a regular file"
	case t&fs.ModeSymlink != 0:
		return "is a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "is a FIFO, not a regular file"
	case t&fs.ModeSocket != 0:
		return "is a socket, not a regular file"
	case t&fs.ModeDevice != 0:
		return "is a device, not a regular file"
	}
	return "is not a regular file"
}

// Problem says what the layer refuses about an entry of mode m (in the
// words of its errors: "is a symbolic link", "is a FIFO, not a regular
// file", …), or "" for a regular file or a directory.
func Problem(m fs.FileMode) string { return modeProblem(m, true, true) }

// NotRegular is the refusal of the entry at path, of mode m, where a
// regular file must be (for callers that list a directory and find one).
func NotRegular(path string, m fs.FileMode) *UnsafeError {
	return &UnsafeError{Path: path, Why: modeProblem(m, false, true)}
}

// parent opens the directory holding rel's last component and returns its
// descriptor and that component. create makes missing directories (perm).
// The root itself (".") has no last component here: callers that mean the
// root use openRoot.
func (r Root) parent(rel string, create bool, perm fs.FileMode) (int, string, error) {
	if rel == "." {
		return -1, "", &UnsafeError{Path: r.dir, Why: "is the root, not an entry beneath it"}
	}
	fd, err := r.openRoot()
	if err != nil {
		return -1, "", err
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i, c := range parts[:len(parts)-1] {
		full := r.abs(filepath.Join(parts[:i+1]...))
		next, err := r.openDirAt(fd, c, full, create, perm)
		unix.Close(fd)
		if err != nil {
			return -1, "", err
		}
		fd = next
	}
	return fd, parts[len(parts)-1], nil
}

// leaf opens the directory holding path's last component (no link
// followed on the way) and returns its descriptor, that component and
// path relative to the root.
func (r Root) leaf(path string) (dirfd int, name, rel string, err error) {
	if rel, err = r.rel(path); err != nil {
		return -1, "", "", err
	}
	dirfd, name, err = r.parent(rel, false, 0)
	return dirfd, name, rel, err
}

// openLeaf opens the last component in dirfd with flags (O_NOFOLLOW and
// O_NONBLOCK added) and checks its type with fstat.
func (r Root) openLeaf(dirfd int, name, full string, flags int, perm fs.FileMode, dirOK, fileOK bool) (*os.File, error) {
	// Look before opening: opening a device can act by itself (a watchdog
	// starts, a tape rewinds, a terminal becomes the controlling one), so a
	// special file already there is refused unopened. One swapped in after
	// this look is still caught by the fstat below (O_NOCTTY: it does not
	// become our terminal meanwhile).
	var pre unix.Stat_t
	if unix.Fstatat(dirfd, name, &pre, unix.AT_SYMLINK_NOFOLLOW) == nil {
		switch pre.Mode & unix.S_IFMT {
		case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
			return nil, &UnsafeError{Path: full, Why: typeProblem(uint32(pre.Mode), dirOK, fileOK)}
		}
	}
	fd, made, err := r.openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, perm)
	if err != nil {
		return nil, r.explain(dirfd, name, full, "open", err, dirOK && !fileOK)
	}
	if made {
		if err := r.giveMade(fd, full); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	if why := typeProblem(uint32(st.Mode), dirOK, fileOK); why != "" {
		unix.Close(fd)
		return nil, &UnsafeError{Path: full, Why: why}
	}
	// Regular files and directories never block; reads and writes on them
	// behave the same with or without O_NONBLOCK, which is cleared anyway.
	if flags&unix.O_NONBLOCK == 0 {
		_ = unix.SetNonblock(fd, false)
	}
	return os.NewFile(uintptr(fd), full), nil
}

// openat opens name in dirfd with flags and reports whether it created
// the file. When what is created must be handed over (heir), O_CREAT
// without O_EXCL is split in two, create-exclusively then open, so that
// made is certain.
func (r Root) openat(dirfd int, name string, flags int, perm fs.FileMode) (fd int, made bool, err error) {
	open := func(flags int) (int, error) {
		return ignoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags, uint32(perm.Perm())) })
	}
	if flags&unix.O_CREAT == 0 {
		fd, err = open(flags)
		return fd, false, err
	}
	if flags&unix.O_EXCL != 0 {
		fd, err = open(flags)
		return fd, err == nil, err
	}
	if _, _, ok := r.heir(); !ok {
		fd, err = open(flags)
		return fd, false, err
	}
	for try := 0; ; try++ {
		fd, err = open(flags | unix.O_EXCL)
		if err == nil || !errors.Is(err, unix.EEXIST) {
			return fd, err == nil, err
		}
		fd, err = open(flags &^ unix.O_CREAT)
		if err == nil || !errors.Is(err, unix.ENOENT) || try > 10 {
			return fd, false, err
		}
	}
}

// OpenFile opens path with flag (os.O_* values) and perm for a regular
// file. O_CREATE makes it when missing; a link or special file in its
// place is refused either way.
func (r Root) OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	dirfd, name, rel, err := r.leaf(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	return r.openLeaf(dirfd, name, r.abs(rel), flag, perm, false, true)
}

// Open opens the regular file path for reading.
func (r Root) Open(path string) (*os.File, error) { return r.OpenFile(path, os.O_RDONLY, 0) }

// MaxRead is the largest cap a caller of ReadFile may give: every file of
// an instance is small, and one the agent made huge (a sparse file costs it
// nothing) must not exhaust the host's memory. Each kind of file has a cap
// of its own, far below (instance.Max*).
const MaxRead = 256 << 20

// ErrTooLarge is what a *TooLargeError wraps.
var ErrTooLarge = errors.New("file too large")

// TooLargeError is a file over the cap of its kind: refused, never read.
type TooLargeError struct {
	Path string // absolute
	Size int64  // its size when refused (at least Max+1)
	Max  int64  // the cap
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s (%d bytes): not read (hobbs bounds every file it reads from the instance: inspect it, then shorten or remove it)",
		e.Path, FormatSize(e.Max), e.Size)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// FormatSize says n bytes in the largest whole binary unit: "1 GiB",
// "256 KiB", "1000 bytes".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadFile reads the regular file path whole, max bytes at most (a cap
// over MaxRead counts as MaxRead). A larger file is a *TooLargeError,
// refused after one fstat without reading it, and so is one that grows
// past the cap while it is read: at most max+1 bytes of a file are held.
func (r Root) ReadFile(path string, max int64) ([]byte, error) {
	f, err := r.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, max)
}

// openFile is what readAtMost needs of an open file.
type openFile interface {
	io.Reader
	Stat() (fs.FileInfo, error)
	Name() string
}

// readAtMost reads the open regular file f whole, max bytes at most.
func readAtMost(f openFile, max int64) ([]byte, error) {
	max = min(max, MaxRead)
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Path: f.Name(), Size: fi.Size(), Max: max}
	}
	// Room for the size fstat gave and one byte more, to see the end; a
	// file that grew meanwhile is read into a buffer that grows to max+1.
	b := make([]byte, 0, fi.Size()+1)
	for {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(2*int64(cap(b))+512, max+1))
			copy(nb, b)
			b = nb
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > max {
			return nil, &TooLargeError{Path: f.Name(), Size: int64(len(b)), Max: max}
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: err}
		}
	}
}

// OpenDir opens the directory path (the root for "." or the root's path).
func (r Root) OpenDir(path string) (*os.File, error) {
	rel, err := r.rel(path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		fd, err := r.openRoot()
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), r.dir), nil
	}
	dirfd, name, err := r.parent(rel, false, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	return r.openLeaf(dirfd, name, r.abs(rel), unix.O_RDONLY|unix.O_DIRECTORY, 0, true, false)
}

// ReadDir lists the directory path, sorted by name. Each entry's Info is
// taken from the open directory without following links.
func (r Root) ReadDir(path string) ([]fs.DirEntry, error) {
	d, err := r.OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.Name(), Err: err}
	}
	out := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(int(d.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(d.Name(), n), Err: err}
		}
		out = append(out, dirEntry{info: statInfo(n, &st)})
	}
	sortEntries(out)
	return out, nil
}

// Lstat describes the entry at path without following a link in any
// component, its last included.
func (r Root) Lstat(path string) (fs.FileInfo, error) {
	rel, err := r.rel(path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		var st unix.Stat_t
		if err := unix.Stat(r.dir, &st); err != nil {
			return nil, &fs.PathError{Op: "stat", Path: r.dir, Err: err}
		}
		return statInfo(filepath.Base(r.dir), &st), nil
	}
	dirfd, name, err := r.parent(rel, false, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: r.abs(rel), Err: err}
	}
	return statInfo(name, &st), nil
}

// Stat is Lstat that refuses anything but a regular file or a directory.
func (r Root) Stat(path string) (fs.FileInfo, error) {
	fi, err := r.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, &UnsafeError{Path: r.abs(mustRel(r, path)), Why: typeProblem(uint32(fi.Sys().(*unix.Stat_t).Mode), true, true)}
	}
	return fi, nil
}

func mustRel(r Root, p string) string {
	rel, err := r.rel(p)
	if err != nil {
		return p
	}
	return rel
}

// Exists reports whether path is a regular file or directory (a link or
// special file does not count, nor does an error).
func (r Root) Exists(path string) bool {
	_, err := r.Stat(path)
	return err == nil
}

// MkdirAll makes directory path and its missing parents (perm), refusing a
// link in any component.
func (r Root) MkdirAll(path string, perm fs.FileMode) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	if rel == "." {
		return os.MkdirAll(r.dir, perm)
	}
	if err := os.MkdirAll(r.dir, perm); err != nil {
		return err
	}
	dirfd, name, err := r.parent(rel, true, perm)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	fd, err := r.openDirAt(dirfd, name, r.abs(rel), true, perm)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// Mkdir makes directory path (perm); its parent must exist. An existing
// entry is an error satisfying errors.Is(err, fs.ErrExist).
func (r Root) Mkdir(path string, perm fs.FileMode) error {
	dirfd, name, rel, err := r.leaf(path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Mkdirat(dirfd, name, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: r.abs(rel), Err: err}
	}
	if _, _, ok := r.heir(); !ok {
		return nil
	}
	fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, dirFlags, 0) })
	if err != nil {
		return r.explain(dirfd, name, r.abs(rel), "open", err, true)
	}
	defer unix.Close(fd)
	return r.giveMade(fd, r.abs(rel))
}

// Remove removes the entry at path (a file, a link itself, an empty
// directory), never what a link points to.
func (r Root) Remove(path string) error {
	dirfd, name, rel, err := r.leaf(path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	err = unix.Unlinkat(dirfd, name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if derr := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); derr == nil || !errors.Is(derr, unix.ENOTDIR) {
			err = derr
		}
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: r.abs(rel), Err: err}
	}
	return nil
}

// RemoveAll removes path and everything beneath it, links as links. A
// missing path is no error.
func (r Root) RemoveAll(path string) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	dirfd, name, err := r.parent(rel, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	return removeAllAt(dirfd, name, r.abs(rel))
}

func removeAllAt(dirfd int, name, full string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &fs.PathError{Op: "remove", Path: full, Err: err}
	}
	fd, err := unix.Openat(dirfd, name, dirFlags, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: full, Err: err}
	}
	d := os.NewFile(uintptr(fd), full)
	names, err := d.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAllAt(fd, n, filepath.Join(full, n)); err != nil {
				break
			}
		}
	}
	d.Close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: full, Err: err}
	}
	return nil
}

// Rename renames oldpath to newpath, both beneath the root. A link at
// either end is moved or replaced itself, never followed.
func (r Root) Rename(oldpath, newpath string) error {
	orel, err := r.rel(oldpath)
	if err != nil {
		return err
	}
	nrel, err := r.rel(newpath)
	if err != nil {
		return err
	}
	ofd, oname, err := r.parent(orel, false, 0)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	nfd, nname, err := r.parent(nrel, false, 0)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := unix.Renameat(ofd, oname, nfd, nname); err != nil {
		return &os.LinkError{Op: "rename", Old: r.abs(orel), New: r.abs(nrel), Err: err}
	}
	_ = unix.Fsync(nfd)
	return nil
}

// Link makes newpath (beneath the root, not there yet) another name for
// the regular file oldpath: no link followed on the way to either, nor
// oldpath itself. A later write of oldpath (a new file renamed over it)
// leaves newpath as it was.
func (r Root) Link(oldpath, newpath string) error {
	ofd, oname, orel, err := r.leaf(oldpath)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	var st unix.Stat_t
	if err := unix.Fstatat(ofd, oname, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lstat", Path: r.abs(orel), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return NotRegular(r.abs(orel), fileMode(uint32(st.Mode)))
	}
	nfd, nname, nrel, err := r.leaf(newpath)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := unix.Linkat(ofd, oname, nfd, nname, 0); err != nil {
		return &os.LinkError{Op: "link", Old: r.abs(orel), New: r.abs(nrel), Err: err}
	}
	_ = unix.Fsync(nfd)
	return nil
}

// MoveTo renames oldpath beneath r to newpath beneath dst (its directory
// made already), the entry itself whatever it is, never followed. Across
// file systems it fails with EXDEV and moves nothing.
func (r Root) MoveTo(oldpath string, dst Root, newpath string) error {
	ofd, oname, orel, err := r.leaf(oldpath)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	nfd, nname, nrel, err := dst.leaf(newpath)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := unix.Renameat(ofd, oname, nfd, nname); err != nil {
		return &os.LinkError{Op: "rename", Old: r.abs(orel), New: dst.abs(nrel), Err: err}
	}
	_ = unix.Fsync(nfd)
	_ = unix.Fsync(ofd)
	return nil
}

// Chmod sets path's permission bits (a regular file or a directory).
func (r Root) Chmod(path string, mode fs.FileMode) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	var f *os.File
	if rel == "." {
		f, err = r.OpenDir(".")
	} else {
		var dirfd int
		var name string
		dirfd, name, err = r.parent(rel, false, 0)
		if err != nil {
			return err
		}
		f, err = r.openLeaf(dirfd, name, r.abs(rel), unix.O_RDONLY, 0, true, true)
		unix.Close(dirfd)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(mode.Perm())
}

// Write atomically replaces path with data, created with perm: a temporary
// file in the same directory, fsync, rename over the old entry (a link there
// is replaced, not followed), fsync of the directory.
func (r Root) Write(path string, data []byte, perm fs.FileMode) error {
	return r.placeTemp(path, data, perm, "rename", func(dirfd int, tmp, name string) error {
		return unix.Renameat(dirfd, tmp, dirfd, name)
	})
}

// Create atomically creates path with data and fails with an error
// satisfying errors.Is(err, fs.ErrExist) if anything (a link included) is
// there. Content is complete the moment the name appears.
func (r Root) Create(path string, data []byte, perm fs.FileMode) error {
	return r.placeTemp(path, data, perm, "create", func(dirfd int, tmp, name string) error {
		err := unix.Linkat(dirfd, tmp, dirfd, name, 0)
		if errors.Is(err, unix.EEXIST) {
			return fs.ErrExist
		}
		return err
	})
}

// placeTemp writes data to a temporary file beside path's last component,
// puts it in place with place (op names it in errors), removes what is
// left of the temporary file and syncs the directory (some filesystems
// refuse; the placing is atomic anyway).
func (r Root) placeTemp(path string, data []byte, perm fs.FileMode, op string, place func(dirfd int, tmp, name string) error) error {
	dirfd, name, rel, err := r.leaf(path)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	tmp, err := r.writeTempAt(dirfd, name, r.abs(rel), data, perm)
	if err != nil {
		return err
	}
	err = place(dirfd, tmp, name)
	_ = unix.Unlinkat(dirfd, tmp, 0) // gone already after a rename
	if err != nil {
		return &fs.PathError{Op: op, Path: r.abs(rel), Err: err}
	}
	_ = unix.Fsync(dirfd)
	return nil
}

// writeTempAt writes data to a new temporary file beside name in dirfd
// (handed to the root's owner, see heir) and returns the temporary file's
// name.
func (r Root) writeTempAt(dirfd int, name, full string, data []byte, perm fs.FileMode) (string, error) {
	var fd int
	var tmp string
	for try := 0; ; try++ {
		var b [6]byte
		_, _ = rand.Read(b[:])
		tmp = ".tmp-" + name + "-" + hex.EncodeToString(b[:])
		var err error
		fd, err = unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) || try > 10 {
			return "", fmt.Errorf("write %s: %w", full, err)
		}
	}
	f := os.NewFile(uintptr(fd), full)
	fail := func(err error) (string, error) {
		f.Close()
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return "", fmt.Errorf("write %s: %w", full, err)
	}
	if err := r.giveMade(fd, full); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm.Perm()); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return "", fmt.Errorf("write %s: %w", full, err)
	}
	return tmp, nil
}

// Append writes line to the end of path (created with perm if missing) in a
// single write(2) with O_APPEND, under the lock path+".lock", so that
// concurrent appenders never interleave within a line.
func (r Root) Append(path string, line []byte, perm fs.FileMode) error {
	_, err := r.AppendCount(path, line, perm)
	return err
}

// AppendCount is Append that also returns how many bytes of line reached
// the file: a write that fails part way (a full disk) may have written some,
// and a caller that retries must not write them twice.
func (r Root) AppendCount(path string, line []byte, perm fs.FileMode) (int, error) {
	rel, err := r.rel(path)
	if err != nil {
		return 0, err
	}
	if rel == "." {
		return 0, &UnsafeError{Path: r.dir, Why: "is the root, not a file beneath it"}
	}
	unlock, err := r.Lock(rel+".lock", 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer unlock()
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
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

// Lock takes an exclusive advisory lock on lockPath (created if missing, a
// regular file: a link or FIFO there is refused), waiting up to timeout (0
// waits forever). The returned function releases it. The kernel releases it
// if the process dies.
func (r Root) Lock(lockPath string, timeout time.Duration) (unlock func(), err error) {
	f, err := r.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	return lockFile(f, timeout)
}

// lockFile polls for the lock (flock has no timeout). The interval grows to
// a few milliseconds and no more: waiters that slept longer would leave the
// lock free while they sleep, and a queue of them would move one sleep at a
// time. A waiter's poll is one cheap system call.
func lockFile(f *os.File, timeout time.Duration) (func(), error) {
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if ok {
			return func() { unlockFile(f); f.Close() }, nil
		}
		if timeout > 0 && time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), ErrLockTimeout)
		}
		time.Sleep(delay)
		delay = min(2*delay, 8*time.Millisecond)
	}
}

// StatTree calls fn with the path (slash-separated, relative to dir) and
// the lstat of every entry beneath dir, in no set order: each directory is
// opened as OpenDir does and its entries are statted through it, without
// following links and without sorting or building full paths, for trees
// of many files read often. fi is valid only during the call (it is
// reused): fn copies what it keeps. A directory that does not exist has
// no entries; one removed meanwhile is skipped. fn's fs.SkipDir on a
// directory skips it.
func (r Root) StatTree(dir string, fn func(rel string, fi fs.FileInfo) error) error {
	return r.statTree(dir, "", fn)
}

func (r Root) statTree(dir, prefix string, fn func(string, fs.FileInfo) error) error {
	d, err := r.OpenDir(filepath.Join(dir, filepath.FromSlash(prefix)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: d.Name(), Err: err}
	}
	fi := &fileInfo{}
	for _, n := range names {
		if err := unix.Fstatat(int(d.Fd()), n, &fi.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			return &fs.PathError{Op: "lstat", Path: filepath.Join(d.Name(), n), Err: err}
		}
		fi.name = n
		rel := n
		if prefix != "" {
			rel = prefix + "/" + n
		}
		err := fn(rel, fi)
		if fi.IsDir() {
			if errors.Is(err, fs.SkipDir) {
				continue
			}
			if err == nil {
				err = r.statTree(dir, rel, fn)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Walk calls fn for every entry beneath dir (dir itself first), in lexical
// order, without following links: a link is reported as a link. fn's
// fs.SkipDir skips a directory.
func (r Root) Walk(dir string, fn func(path string, d fs.DirEntry, err error) error) error {
	rel, err := r.rel(dir)
	if err != nil {
		return err
	}
	fi, err := r.Lstat(rel)
	if err != nil {
		return fn(r.abs(rel), nil, err)
	}
	return r.walk(rel, fs.FileInfoToDirEntry(fi), fn)
}

func (r Root) walk(rel string, d fs.DirEntry, fn func(string, fs.DirEntry, error) error) error {
	if err := fn(r.abs(rel), d, nil); err != nil || !d.IsDir() {
		if errors.Is(err, fs.SkipDir) && d.IsDir() {
			return nil
		}
		return err
	}
	ents, err := r.ReadDir(rel)
	if err != nil {
		if err := fn(r.abs(rel), d, err); err != nil && !errors.Is(err, fs.SkipDir) {
			return err
		}
		return nil
	}
	for _, e := range ents {
		if err := r.walk(filepath.Join(rel, e.Name()), e, fn); err != nil {
			if errors.Is(err, fs.SkipDir) {
				continue
			}
			return err
		}
	}
	return nil
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

// ErrTooDeep is what FindNames reports for a tree deeper than it walks.
var ErrTooDeep = errors.New("too deep")

// FindNames walks the directory dir and calls found with the path (beneath
// the root, absolute) of every entry whose name is in names, whatever its
// type, without descending into it. It follows no link, opens each
// directory relative to the one above it with O_NOFOLLOW, and stats no
// entry (the directory's own entry types decide what to descend into), so
// a tree of many files costs one getdents a directory. It descends at most
// maxDepth levels below dir: a directory deeper than that is not walked
// and is reported, after the rest, by an error wrapping ErrTooDeep naming
// it. found may rename or remove the entry it is given.
func (r Root) FindNames(dir string, names map[string]bool, maxDepth int, found func(path string) error) error {
	d, err := r.OpenDir(dir)
	if err != nil {
		return err
	}
	var tooDeep string
	err = r.findNames(d, names, maxDepth, found, &tooDeep)
	if err == nil && tooDeep != "" {
		err = &fs.PathError{Op: "walk", Path: tooDeep, Err: fmt.Errorf("%w: more than %d levels below %s", ErrTooDeep, maxDepth, r.abs(mustRel(r, dir)))}
	}
	return err
}

// findNames is FindNames below the open directory d (closed on return).
func (r Root) findNames(d *os.File, names map[string]bool, depth int, found func(string) error, tooDeep *string) error {
	ents, err := d.ReadDir(-1)
	if err != nil {
		d.Close()
		return &fs.PathError{Op: "readdir", Path: d.Name(), Err: err}
	}
	var subdirs []string
	for _, e := range ents {
		switch {
		case names[e.Name()]:
			if err := found(filepath.Join(d.Name(), e.Name())); err != nil {
				d.Close()
				return err
			}
		case e.Type().IsDir():
			subdirs = append(subdirs, e.Name())
		}
	}
	defer d.Close()
	for _, n := range subdirs {
		p := filepath.Join(d.Name(), n)
		if depth == 0 {
			if *tooDeep == "" {
				*tooDeep = p
			}
			continue
		}
		fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(int(d.Fd()), n, dirFlags, 0) })
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			return r.explain(int(d.Fd()), n, p, "open", err, true)
		}
		if err := r.findNames(os.NewFile(uintptr(fd), p), names, depth-1, found, tooDeep); err != nil {
			return err
		}
	}
	return nil
}
