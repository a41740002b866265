//go:build linux

package safefile

import "golang.org/x/sys/unix"

// ctimeFileSystems are the file systems whose directories' change time
// Scan trusts to move with every change of their entries: the local ones
// of the kernel itself. A network, FUSE or overlay file system is listed
// in full by every Scan.
var ctimeFileSystems = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true, // ext2, ext3 and ext4 share it
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC:       true,
	unix.F2FS_SUPER_MAGIC:  true,
	0x2fc12fc1:             true, // ZFS
}

// trustsCtime reports whether the directory dir is on such a file system.
func trustsCtime(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && ctimeFileSystems[int64(st.Type)]
}
