package vfs

import (
	"io/fs"
	"strings"
)

// Within returns fsys with its directory dir opened once (Sub) and shown
// under the name as (dir itself when as is dir): the name as is that
// directory and a name as/rest is rest in it, resolved relative to the
// open directory; any other name is fsys's own. A tool that reads one
// session's files through the paths the store's packages build (a
// backup's source, a staged copy checked as the session it becomes) so
// pays for the directory's path once, not on each open: on the real file
// system a file directly in dir costs a stat and an openat(2) relative
// to it. Elsewhere (the simulation, Faulty) names are mapped to dir's
// and go through fsys, so fault rules see the paths they always saw.
// The directory is refused as Sub refuses it (a symlink, not a
// directory); close the result after use.
func Within(fsys FS, dir, as string) (SubFS, error) {
	d, err := Sub(fsys, dir)
	if err != nil {
		return nil, err
	}
	return &withinFS{FS: fsys, d: d, dir: dir, as: as}, nil
}

// withinFS is Within's FS: names under as go to d (directory dir of
// FS), others to FS.
type withinFS struct {
	FS
	d       SubFS
	dir, as string
}

// rel is name relative to the directory, and whether it is in it.
func (w *withinFS) rel(name string) (string, bool) {
	if name == w.as {
		return ".", true
	}
	rest, ok := strings.CutPrefix(name, w.as+"/")
	return rest, ok
}

// path is name as fsys names it: one under as is one under dir.
func (w *withinFS) path(name string) string {
	if rest, ok := w.rel(name); ok {
		return join(w.dir, rest)
	}
	return name
}

func (w *withinFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if rest, ok := w.rel(name); ok {
		f, err := w.d.OpenFile(rest, flag, perm)
		if of, ok := f.(*osFile); ok {
			of.name = join(w.dir, rest) // named as fsys names it
		}
		return f, err
	}
	return w.FS.OpenFile(name, flag, perm)
}

func (w *withinFS) Mkdir(name string, perm fs.FileMode) error {
	if rest, ok := w.rel(name); ok {
		return w.d.Mkdir(rest, perm)
	}
	return w.FS.Mkdir(name, perm)
}

func (w *withinFS) Remove(name string) error {
	if rest, ok := w.rel(name); ok {
		return w.d.Remove(rest)
	}
	return w.FS.Remove(name)
}

func (w *withinFS) RemoveAll(name string) error {
	if rest, ok := w.rel(name); ok && rest != "." {
		return w.d.RemoveAll(rest)
	}
	return w.FS.RemoveAll(w.path(name))
}

func (w *withinFS) Lstat(name string) (fs.FileInfo, error) {
	if rest, ok := w.rel(name); ok && rest != "." {
		return w.d.Lstat(rest)
	}
	return w.FS.Lstat(w.path(name))
}

func (w *withinFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if rest, ok := w.rel(name); ok {
		return w.d.ReadDir(rest)
	}
	return w.FS.ReadDir(name)
}

func (w *withinFS) SyncDir(name string) error {
	if rest, ok := w.rel(name); ok {
		return w.d.SyncDir(rest)
	}
	return w.FS.SyncDir(name)
}

// The operations on two names go through fsys, by path.

func (w *withinFS) Rename(o, n string) error { return w.FS.Rename(w.path(o), w.path(n)) }
func (w *withinFS) RenameNoReplace(o, n string) error {
	return w.FS.RenameNoReplace(w.path(o), w.path(n))
}
func (w *withinFS) Link(o, n string) error { return w.FS.Link(w.path(o), w.path(n)) }

func (w *withinFS) SyncAll(names []string) error {
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = w.path(n)
	}
	return w.FS.SyncAll(paths)
}

// sub is Sub of a directory in the open one, relative to it.
func (w *withinFS) sub(dir string) (SubFS, error) {
	if rest, ok := w.rel(dir); ok && rest != "." {
		return Sub(w.d, rest)
	}
	return Sub(w.FS, w.path(dir))
}

func (w *withinFS) Close() error { return w.d.Close() }
