package layer

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A snapshot is a tree of hard links to the share's files. Making one
// anew links every file; a snapshot an ended session left (recycled) is
// brought up to date instead: a file whose directory entry names the same
// inode as the share's is the same file (the host replaces files in effect
// by rename, so a changed file has a new inode, and an inode the old
// snapshot still links cannot be reused meanwhile), so only what changed
// is linked again. Both read directories with their inode numbers
// (getdents), without a stat per file.

type dirent struct {
	ino uint64
	typ uint8 // unix.DT_*
}

// readDirIno lists dir's entries with their inode numbers and types.
func readDirIno(dir string) (map[string]dirent, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	out := map[string]dirent{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			if len(b) < 19 {
				return nil, &fs.PathError{Op: "getdents", Path: dir, Err: errors.New("short record")}
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, &fs.PathError{Op: "getdents", Path: dir, Err: errors.New("bad record")}
			}
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if s := string(name); s != "." && s != ".." {
				out[s] = dirent{ino: binary.NativeEndian.Uint64(b[0:8]), typ: b[18]}
			}
			b = b[reclen:]
		}
	}
}

// typeOf is an entry's type, from the directory or, where the file system
// does not say (DT_UNKNOWN), from lstat.
func typeOf(dir, name string, e dirent) uint8 {
	if e.typ != unix.DT_UNKNOWN {
		return e.typ
	}
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(dir, name), &st) != nil {
		return unix.DT_UNKNOWN
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFDIR:
		return unix.DT_DIR
	}
	return unix.DT_UNKNOWN
}

// syncSnapshot makes the tree dst hold hard links to the regular files of
// src and its directories, and nothing else: entries already linking the
// same inode stay. link is called for each file linked (from, to).
func syncSnapshot(src, dst string, link func(from, to string) error) error {
	se, err := readDirIno(src)
	if err != nil {
		return err
	}
	de, err := readDirIno(dst)
	if err != nil {
		return err
	}
	for name, d := range de {
		s, ok := se[name]
		st := typeOf(src, name, s)
		dt := typeOf(dst, name, d)
		if ok && (st == unix.DT_REG && dt == unix.DT_REG && s.ino == d.ino || st == unix.DT_DIR && dt == unix.DT_DIR) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dst, name)); err != nil {
			return err
		}
		delete(de, name)
	}
	for name, s := range se {
		from, to := filepath.Join(src, name), filepath.Join(dst, name)
		switch typeOf(src, name, s) {
		case unix.DT_REG:
			if _, ok := de[name]; ok {
				continue
			}
			if err := link(from, to); err != nil {
				return err
			}
		case unix.DT_DIR:
			if _, ok := de[name]; !ok {
				if err := os.Mkdir(to, 0o755); err != nil {
					return err
				}
			}
			if err := syncSnapshot(from, to, link); err != nil {
				return err
			}
		}
	}
	return nil
}
