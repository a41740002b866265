//go:build darwin

package safefile

import "golang.org/x/sys/unix"

// trustsCtime reports whether the directory dir is on a file system whose
// directories' change time Scan trusts to move with every change of their
// entries: APFS and HFS+. Others are listed in full by every Scan.
func trustsCtime(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	switch unix.ByteSliceToString(st.Fstypename[:]) {
	case "apfs", "hfs":
		return true
	}
	return false
}
