//go:build unix

package fslease

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Open flags. O_NOFOLLOW makes an open of a symlink fail instead of reaching
// its target. O_NONBLOCK keeps an open of a planted FIFO from hanging; it
// has no effect on regular files, and the lock is only ever taken with
// LOCK_NB anyway. os.OpenFile adds O_CLOEXEC, so no exec'd child inherits a
// lock descriptor.
const (
	noFollowFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK

	// lockOpenFlags opens lease.lock for the exclusive lock.
	lockOpenFlags = os.O_CREATE | os.O_RDWR | noFollowFlags

	// probeOpenFlags opens lease.lock for Inspect's shared probe: without
	// O_CREATE, so that a reader never creates a file.
	probeOpenFlags = os.O_RDONLY | noFollowFlags
)

// setModTime sets the modification (and access) time of the file at path,
// without following a symlink planted there.
func setModTime(path string, t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimensat", Path: path, Err: err}
	}
	return nil
}
