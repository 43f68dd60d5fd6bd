//go:build linux

package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// datasync makes f's data durable as the store does on Linux: fdatasync.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// fallocate reserves size bytes for f without writing them (unwritten
// extents: reads give zeros, the first write converts them).
func fallocate(f *os.File, size int64) error { return unix.Fallocate(int(f.Fd()), 0, 0, size) }

// canFallocate says whether fallocate does anything here.
const canFallocate = true

// fsType names the file system holding dir.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs (no durable sync: figures are meaningless)"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	case unix.F2FS_SUPER_MAGIC:
		return "f2fs"
	}
	return "type 0x" + strconv.FormatInt(int64(st.Type), 16)
}
