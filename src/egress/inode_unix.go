//go:build unix

package egress

import (
	"io/fs"
	"strconv"
	"syscall"
)

func inode(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Ino), 10)
	}
	return ""
}
