package vfs

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func renameNoReplace(dirfd int, oldname, newname string) error {
	return unix.Renameat2(dirfd, oldname, dirfd, newname, unix.RENAME_NOREPLACE)
}

// fullSync is fsync: on Linux it reaches the disk's stable storage.
func fullSync(f *os.File) error { return f.Sync() }

// dataSync is fdatasync: file data plus the metadata needed to read it.
func dataSync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// statDev is the device number of s (a uint64 on Linux).
func statDev(s *syscall.Stat_t) uint64 { return s.Dev }

// statLinks is the hard link count of s (a uint64 on Linux).
func statLinks(s *syscall.Stat_t) uint64 { return s.Nlink }

// statCtime is the status change time of s, in nanoseconds since 1970.
func statCtime(s *syscall.Stat_t) int64 { return s.Ctim.Nano() }

// syncFS is syncfs(2): everything written to f's file system reaches
// stable storage; its error reports a write-back that failed since f was
// opened.
func syncFS(f *os.File) error {
	for {
		err := unix.Syncfs(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
