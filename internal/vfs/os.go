package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sessionstore/sessionstore/internal/owner"
)

// osFS is the real file system, confined to an *os.Root.
type osFS struct {
	root *os.Root
}

// OS returns the real file system rooted at root. The caller keeps
// ownership of root and closes it after the FS is no longer used.
func OS(root *os.Root) FS { return &osFS{root: root} }

// checkPath refuses a symlink at any component of name. os.Root already
// refuses to leave the root; this also refuses symlinks that stay inside
// it, because nothing in a store is ever a symlink and one planted in a
// session directory must not redirect a write.
func (o *osFS) checkPath(name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			continue
		}
		prefix := name[:i]
		if prefix == "" || prefix == "." {
			continue
		}
		var err error
		fi, err = o.root.Lstat(prefix)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &fs.PathError{Op: "open", Path: prefix, Err: ErrSymlink}
		}
	}
	return fi, nil
}

func (o *osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	before, err := o.checkPath(name)
	if err != nil && (!errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0) {
		return nil, err
	}
	if before != nil && !before.Mode().IsRegular() && !before.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	// O_NONBLOCK: a FIFO swapped in after the check must not block the
	// open (it is refused below); it changes nothing for regular files and
	// directories.
	f, err := o.root.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: ErrSymlink}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		err = &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	if err != nil {
		_ = f.Close() // read nothing, wrote nothing
		return nil, err
	}
	// The entry checked may have been swapped between the check and the
	// open: make sure we opened what we checked (fi describes the file
	// opened).
	if before != nil {
		if IdentityOf(fi) != IdentityOf(before) {
			_ = f.Close()
			return nil, &fs.PathError{Op: "open", Path: name, Err: ErrReplaced}
		}
	}
	if flag&os.O_CREATE != 0 {
		if err := o.inheritOwner(f, name); err != nil {
			_ = f.Close() // the error is what matters; the caller removes what it created
			return nil, err
		}
	}
	return &osFile{File: f, name: name}, nil
}

// inheritOwner gives f, created as name, to the owner of its directory
// when this process runs as root (see package owner): root repairing or
// compacting another user's store must not leave files that user cannot
// read.
func (o *osFS) inheritOwner(f *os.File, name string) error {
	if !owner.Active() {
		return nil
	}
	dir, err := o.root.Lstat(parent(name))
	if err != nil {
		return err
	}
	return owner.Inherit(f, dir)
}

func (o *osFS) Mkdir(name string, perm fs.FileMode) error {
	if _, err := o.checkPath(parent(name)); err != nil {
		return err
	}
	if err := o.root.Mkdir(name, perm); err != nil {
		return err
	}
	if !owner.Active() {
		return nil
	}
	d, err := o.root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	err = o.inheritOwner(d, name)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// The operations below act on the final component itself (never through
// a symlink there); checkParent refuses symlinks in the components that
// lead to it.

func (o *osFS) checkParent(name string) error {
	_, err := o.checkPath(parent(name))
	return err
}

func (o *osFS) Rename(oldname, newname string) error {
	if err := o.checkParent(oldname); err != nil {
		return err
	}
	if err := o.checkParent(newname); err != nil {
		return err
	}
	return o.root.Rename(oldname, newname)
}

func (o *osFS) Link(oldname, newname string) error {
	fi, err := o.checkPath(oldname)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "link", Path: oldname, Err: ErrNotRegular}
	}
	if err := o.checkParent(newname); err != nil {
		return err
	}
	return o.root.Link(oldname, newname)
}

func (o *osFS) Remove(name string) error {
	if err := o.checkParent(name); err != nil {
		return err
	}
	return o.root.Remove(name)
}

func (o *osFS) RemoveAll(name string) error {
	if err := o.checkParent(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing to remove, like os.RemoveAll
		}
		return err
	}
	return o.root.RemoveAll(name)
}

func (o *osFS) Lstat(name string) (fs.FileInfo, error) {
	if err := o.checkParent(name); err != nil {
		return nil, err
	}
	return o.root.Lstat(name)
}

func (o *osFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if _, err := o.checkPath(name); err != nil {
		return nil, err
	}
	return fs.ReadDir(o.root.FS(), name)
}

// probe is Probe on the real file system: an lstat of the absolute path
// (the kernel walks it in one call), when the root was opened by one.
func (o *osFS) probe(name string) (fs.FileInfo, error) {
	dir := o.root.Name()
	if !filepath.IsAbs(dir) || !fs.ValidPath(name) {
		return o.Lstat(name)
	}
	return os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
}

func (o *osFS) readDirNames(name string) ([]string, error) {
	if _, err := o.checkPath(name); err != nil {
		return nil, err
	}
	d, err := o.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }() // read-only
	return d.Readdirnames(-1)
}

func (o *osFS) SyncDir(name string) error {
	if name == "" {
		name = "."
	}
	if _, err := o.checkPath(name); err != nil {
		return err
	}
	d, err := o.root.Open(name)
	if err != nil {
		return err
	}
	err = fullSync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncAll flushes the file system through a descriptor of the root
// opened now: syncfs reports a write-back error that no one has reported
// yet, also one from before the descriptor was opened.
func (o *osFS) SyncAll(names []string) error {
	if d, err := o.root.Open("."); err == nil {
		err = syncFS(d)
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	for _, name := range names {
		fi, err := o.Lstat(name)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			err = o.SyncDir(name)
		} else {
			err = syncFile(o, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// syncFile opens regular file name and syncs it.
func syncFile(fsys FS, name string) error {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RenameNoReplace renames within the root without replacing an existing
// target. Both names must be single path components or share their
// parent's path, which is all the store needs (temp directory → session
// directory, session directory → trash).
func (o *osFS) RenameNoReplace(oldname, newname string) error {
	if parent(oldname) != parent(newname) {
		return fmt.Errorf("vfs: RenameNoReplace across directories: %s → %s", oldname, newname)
	}
	if err := o.checkParent(oldname); err != nil {
		return err
	}
	dir, err := o.root.Open(parent(oldname))
	if err != nil {
		return err
	}
	defer func() { _ = dir.Close() }() // a directory handle: nothing to flush
	err = renameNoReplace(int(dir.Fd()), base(oldname), base(newname))
	if err != nil {
		return &os.LinkError{Op: "renamenoreplace", Old: oldname, New: newname, Err: err}
	}
	return nil
}

type osFile struct {
	*os.File
	name string
}

func (f *osFile) Name() string    { return f.name }
func (f *osFile) Sync() error     { return fullSync(f.File) }
func (f *osFile) Datasync() error { return dataSync(f.File) }

func parent(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "."
	}
	return name[:i]
}

func base(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}

// sub opens dir as its own os.Root (refusing a symlink there), so names in
// it resolve relative to one descriptor.
func (o *osFS) sub(dir string) (SubFS, error) {
	fi, err := o.checkPath(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "sub", Path: dir, Err: syscall.ENOTDIR}
	}
	r, err := o.root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if after, err := r.Stat("."); err != nil || IdentityOf(after) != IdentityOf(fi) {
		_ = r.Close()
		return nil, &fs.PathError{Op: "sub", Path: dir, Err: errors.New("directory replaced while opening")}
	}
	return &osSub{osFS: osFS{root: r}}, nil
}

type osSub struct{ osFS }

func (s *osSub) Close() error { return s.root.Close() }
