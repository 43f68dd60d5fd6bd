package vfs

import "golang.org/x/sys/unix"

// Clone makes dst, an empty file open for writing, a clone of src (a
// reflink: FICLONE, a new file sharing src's blocks until either is
// written), where the file system clones; an error otherwise (a file
// system that does not, files of two file systems, a simulated file).
func Clone(dst, src File) error {
	d, ok1 := dst.(interface{ Fd() uintptr })
	s, ok2 := src.(interface{ Fd() uintptr })
	if !ok1 || !ok2 {
		return errUnsupported
	}
	return unix.IoctlFileClone(int(d.Fd()), int(s.Fd()))
}
