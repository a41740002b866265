//go:build linux

package memory

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileStamp is what tells us a file changed: size, mtime, ctime and inode.
type fileStamp struct {
	Size  int64
	Mtime int64 // ns
	Ctime int64 // ns
	Ino   uint64
}

// statAt stats name inside the open directory d (no path walk per file).
func statAt(d *os.File, name string) (fileStamp, bool, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileStamp{}, false, &os.PathError{Op: "stat", Path: name, Err: err}
		}
		break
	}
	regular := st.Mode&unix.S_IFMT == unix.S_IFREG
	return fileStamp{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}, regular, nil
}

func statPath(path string) (fileStamp, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileStamp{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileStamp{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}, nil
}
