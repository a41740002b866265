//go:build linux

package memory

import (
	"bytes"
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// readDirents lists the open directory d with inode numbers without a stat
// per file. A file replaced by rename (how hobbs writes) gets a new inode;
// one edited in place keeps it.
func readDirents(d *os.File) ([]dirent, bool, error) {
	buf := make([]byte, 256<<10)
	var out []dirent
	fd := int(d.Fd())
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, true, &os.PathError{Op: "getdents", Path: d.Name(), Err: err}
		}
		if n <= 0 {
			break
		}
		b := buf[:n]
		for len(b) >= 19 {
			ino := binary.NativeEndian.Uint64(b[0:8])
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, true, &os.PathError{Op: "getdents", Path: d.Name(), Err: unix.EIO}
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
