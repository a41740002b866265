//go:build !linux

package layer

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// readDirIno lists dir's entries with their inode numbers and types, a
// stat per entry (getdents, which gives them without one, is Linux's).
func readDirIno(dir string) (map[string]dirent, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: unix.ENOTDIR}
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]dirent, len(es))
	for _, e := range es {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, e.Name()), &st); err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(dir, e.Name()), Err: err}
		}
		d := dirent{ino: uint64(st.Ino), typ: unix.DT_UNKNOWN}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			d.typ = unix.DT_REG
		case unix.S_IFDIR:
			d.typ = unix.DT_DIR
		}
		out[e.Name()] = d
	}
	return out, nil
}
