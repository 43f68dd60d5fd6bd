package layout

import (
	"errors"
	"io/fs"
	"syscall"
)

// AccessErr reports whether err, met opening or reading a file of a
// session, says nothing about what the file holds: the process may not
// open it (a permission error), or the system failed to read it (EIO,
// too many open files, …). Such an error is never corruption: the file
// may be sound, and a repair that set aside the revisions referencing it
// would lose acknowledged revisions (SECURITY.md). Verify reports the
// session as unreadable, and repair and salvage refuse and change
// nothing. Evidence of damage is a file missing (ENOENT), of the wrong
// kind (a symlink, a directory, a path through a file, not a regular
// file: ELOOP, EISDIR, ENOTDIR, vfs.ErrSymlink, vfs.ErrNotRegular), or
// holding what it should not (an error of no system call: a checksum, a
// decoder, a size).
func AccessErr(err error) bool {
	if errors.Is(err, fs.ErrPermission) {
		return true
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.ENOENT, syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP:
		return false
	}
	return true
}
