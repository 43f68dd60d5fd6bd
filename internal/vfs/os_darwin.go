package vfs

import (
	"errors"
	"os"
	"syscall"

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

// statDev is the device number of s. Darwin's dev_t is an int32, widened
// as it always was, so identities recorded earlier (summary.json) still match.
func statDev(s *syscall.Stat_t) uint64 {
	return uint64(s.Dev) //nolint:gosec // G115: an identity compared for equality, not arithmetic
}

// statLinks is the hard link count of s (a uint16 on macOS).
func statLinks(s *syscall.Stat_t) uint64 { return uint64(s.Nlink) }

// statCtime is the status change time of s, in nanoseconds since 1970.
func statCtime(s *syscall.Stat_t) int64 { return s.Ctimespec.Nano() }

// syncFS is unsupported: macOS has no syncfs, and sync(2) does not wait
// for the data to reach stable storage. SyncAll syncs each name.
func syncFS(*os.File) error { return errors.ErrUnsupported }
