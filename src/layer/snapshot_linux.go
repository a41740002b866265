package layer

import (
	"encoding/binary"
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

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
