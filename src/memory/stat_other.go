//go:build !linux

package memory

import (
	"os"
	"path/filepath"
)

// fileStamp is what tells us a file changed. Without Linux's stat fields only
// size and mtime are used.
type fileStamp struct {
	Size  int64
	Mtime int64
	Ctime int64
	Ino   uint64
}

func statAt(d *os.File, name string) (fileStamp, bool, error) {
	fi, err := os.Lstat(filepath.Join(d.Name(), name))
	if err != nil {
		return fileStamp{}, false, err
	}
	return fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, fi.Mode().IsRegular(), nil
}

func statPath(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, nil
}

type dirent struct {
	name string
	ino  uint64
}

// readDirents is not available here: every check stats every file.
func readDirents(dir string) ([]dirent, bool, error) { return nil, false, nil }
