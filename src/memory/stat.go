package memory

import (
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fileStamp is what tells us a file changed: size, mtime, ctime and inode.
type fileStamp struct {
	Size  int64
	Mtime int64 // ns
	Ctime int64 // ns
	Ino   uint64
}

func stampOf(st *unix.Stat_t) fileStamp {
	return fileStamp{Size: st.Size, Mtime: time.Unix(st.Mtim.Unix()).UnixNano(),
		Ctime: time.Unix(st.Ctim.Unix()).UnixNano(), Ino: uint64(st.Ino)}
}

// modeType is the fs.FileMode type bits of a stat mode.
func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// statAt stats name inside the open directory d without following a link
// (no path walk per file) and returns its stamp and type.
func statAt(d *os.File, name string) (fileStamp, fs.FileMode, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileStamp{}, 0, &os.PathError{Op: "stat", Path: name, Err: err}
		}
		return stampOf(&st), modeType(uint32(st.Mode)), nil
	}
}

// statFile is the stamp of an open file or directory.
func statFile(f *os.File) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileStamp{}, &os.PathError{Op: "stat", Path: f.Name(), Err: err}
	}
	return stampOf(&st), nil
}
