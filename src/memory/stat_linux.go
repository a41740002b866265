//go:build linux

package memory

import (
	"bytes"
	"encoding/binary"
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

// dirent is a directory entry with its inode number, as getdents returns it.
type dirent struct {
	name string
	ino  uint64
}

// readDirents lists dir with inode numbers without a stat per file. A file
// replaced by rename (how hobbs writes) gets a new inode; one edited in
// place keeps it.
func readDirents(dir string) ([]dirent, bool, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, true, err
	}
	defer d.Close()
	buf := make([]byte, 256<<10)
	var out []dirent
	for {
		n, err := unix.Getdents(int(d.Fd()), buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, true, &os.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		b := buf[:n]
		for len(b) >= 19 {
			ino := binary.NativeEndian.Uint64(b[0:8])
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, true, &os.PathError{Op: "getdents", Path: dir, Err: unix.EIO}
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if ino != 0 {
				out = append(out, dirent{string(name), ino})
			}
			b = b[reclen:]
		}
	}
	return out, true, nil
}
