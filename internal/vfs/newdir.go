package vfs

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionstore/sessionstore/internal/owner"
)

// NewDir is a directory of an FS just made, filled with new files and
// directories by name (a backup's staged copy of a session). On the real
// file system the directory is opened once and a file costs an openat(2)
// with O_CREAT|O_EXCL relative to it, a write and a close, where
// FS.OpenFile checks every component of the path on each call. Nothing is
// synced: the caller makes what it wrote durable (FS.SyncAll) before it
// publishes it.
type NewDir interface {
	// Create makes the new regular file name (a single component) with
	// perm, failing with an error that matches fs.ErrExist when the name
	// is taken (a symlink too: it is never followed), and returns it open
	// for reading and writing (what was written can be read back through
	// the same descriptor).
	Create(name string, perm fs.FileMode) (File, error)
	// Mkdir makes the new directory name (a single component) with perm
	// and returns it as a NewDir, which the caller closes.
	Mkdir(name string, perm fs.FileMode) (NewDir, error)
	Close() error
}

// MakeDir makes directory name of fsys with perm (Mkdir's rules) and
// returns it as a NewDir.
func MakeDir(fsys FS, name string, perm fs.FileMode) (NewDir, error) {
	o, ok := fsys.(*osFS)
	if !ok {
		if err := fsys.Mkdir(name, perm); err != nil {
			return nil, err
		}
		return pathDir{fs: fsys, dir: name}, nil
	}
	d, err := o.mkdirOpen(name, perm)
	if err != nil {
		return nil, err
	}
	nd, err := newFdDir(d, name)
	if err != nil {
		_ = fsys.Remove(name) // made just now, empty
		return nil, err
	}
	return nd, nil
}

// pathDir makes files by path through the FS.
type pathDir struct {
	fs  FS
	dir string
}

func (p pathDir) Create(name string, perm fs.FileMode) (File, error) {
	return p.fs.OpenFile(p.dir+"/"+name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
}

func (p pathDir) Mkdir(name string, perm fs.FileMode) (NewDir, error) {
	return MakeDir(p.fs, p.dir+"/"+name, perm)
}

func (pathDir) Close() error { return nil }

// fdDir makes files relative to an open directory. When this process
// runs as root, what it makes is given to the directory's owner, as
// OpenFile and Mkdir do (package owner).
type fdDir struct {
	d    *os.File
	name string
	info fs.FileInfo // the directory's, when owner.Active
}

func newFdDir(d *os.File, name string) (*fdDir, error) {
	fd := &fdDir{d: d, name: name}
	if owner.Active() {
		fi, err := d.Stat()
		if err != nil {
			_ = d.Close() // read-only
			return nil, err
		}
		fd.info = fi
	}
	return fd, nil
}

// component refuses a name that is not a single component of a path.
func (d *fdDir) component(op, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return &fs.PathError{Op: op, Path: d.name + "/" + name, Err: fs.ErrInvalid}
	}
	return nil
}

func (d *fdDir) Create(name string, perm fs.FileMode) (File, error) {
	if err := d.component("create", name); err != nil {
		return nil, err
	}
	// O_EXCL with O_CREAT fails on any existing name, a symlink included,
	// so the file opened is the regular file this call made.
	fd, err := openat(int(d.d.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: d.name + "/" + name, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.name+"/"+name)
	if d.info != nil {
		if err := owner.Inherit(f, d.info); err != nil {
			_ = f.Close() // the error is what matters; the caller removes what it made
			return nil, err
		}
	}
	return &osFile{File: f, name: d.name + "/" + name}, nil
}

func (d *fdDir) Mkdir(name string, perm fs.FileMode) (NewDir, error) {
	if err := d.component("mkdir", name); err != nil {
		return nil, err
	}
	if err := ignoringEINTR(func() error { return unix.Mkdirat(int(d.d.Fd()), name, uint32(perm.Perm())) }); err != nil {
		return nil, &fs.PathError{Op: "mkdir", Path: d.name + "/" + name, Err: err}
	}
	fd, err := openat(int(d.d.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.name + "/" + name, Err: err}
	}
	sub := os.NewFile(uintptr(fd), d.name+"/"+name)
	if d.info != nil {
		if err := owner.Inherit(sub, d.info); err != nil {
			_ = sub.Close() // read-only
			return nil, err
		}
	}
	return newFdDir(sub, d.name+"/"+name)
}

func (d *fdDir) Close() error { return d.d.Close() }

func openat(dirfd int, name string, flags int, perm uint32) (fd int, err error) {
	err = ignoringEINTR(func() error {
		fd, err = unix.Openat(dirfd, name, flags, perm)
		return err
	})
	return fd, err
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
