package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

func renameNoReplace(dirfd int, oldname, newname string) error {
	return unix.RenameatxNp(dirfd, oldname, dirfd, newname, unix.RENAME_EXCL)
}

// fullSync uses F_FULLFSYNC: on macOS plain fsync only reaches the drive's
// volatile cache, not stable storage.
func fullSync(f *os.File) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0)
	if err != nil {
		return f.Sync()
	}
	return nil
}

// dataSync is fullSync: macOS has no fdatasync that reaches stable storage.
func dataSync(f *os.File) error { return fullSync(f) }
