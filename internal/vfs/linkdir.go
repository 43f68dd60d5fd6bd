package vfs

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// DirLinker makes files of one directory names in another, by file name
// (FS.Link's rules: a regular file only, never a symlink, fs.ErrExist when
// the name is taken): a fork's blobs/, made of its parent's. On the real
// file system both directories are opened once and a link costs two
// system calls (a stat and linkat(2)), where FS.Link checks every
// component of both paths.
type DirLinker interface {
	Link(name string) error
	Close() error
}

// NewDirLinker returns the DirLinker of directories src and dst of fsys.
func NewDirLinker(fsys FS, src, dst string) (DirLinker, error) {
	o, ok := fsys.(*osFS)
	if !ok {
		return pathLinker{fsys, src, dst}, nil
	}
	s, err := o.openDir(src)
	if err != nil {
		return nil, err
	}
	d, err := o.openDir(dst)
	if err != nil {
		_ = s.Close() // read-only
		return nil, err
	}
	return &fdLinker{src: s, dst: d}, nil
}

// pathLinker links by path through FS.Link.
type pathLinker struct {
	fs       FS
	src, dst string
}

func (l pathLinker) Link(name string) error {
	return l.fs.Link(l.src+"/"+name, l.dst+"/"+name)
}

func (pathLinker) Close() error { return nil }

// fdLinker links through open directories.
type fdLinker struct{ src, dst *os.File }

func (l *fdLinker) Link(name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(int(l.src.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "link", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return &fs.PathError{Op: "link", Path: name, Err: ErrSymlink}
	default:
		return &fs.PathError{Op: "link", Path: name, Err: ErrNotRegular}
	}
	if err := unix.Linkat(int(l.src.Fd()), name, int(l.dst.Fd()), name, 0); err != nil {
		return &os.LinkError{Op: "link", Old: name, New: name, Err: err}
	}
	return nil
}

func (l *fdLinker) Close() error {
	_ = l.src.Close() // read-only
	return l.dst.Close()
}

// openDir opens directory name (no symlink in any component) for the
// *at system calls.
func (o *osFS) openDir(name string) (*os.File, error) {
	fi, err := o.checkPath(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	return o.root.OpenFile(name, dirFlags, 0)
}
