package importer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// Sources are other programs' files, in directories anyone may have put
// anything into: a named pipe, whose open blocks until a writer comes; a
// link to /dev/zero, which never ends; a link to a file outside the
// directory. A Tree reads a directory so that none of these can hold an
// import: every open goes through an os.Root (a link that resolves
// outside the directory is refused by the kernel's lookup, whenever it
// was planted), is made without blocking (O_NONBLOCK) and keeps only a
// regular file or a directory (anything else is closed at once and
// refused with ErrNotRegular), and every read first checks the context,
// so a cancelled import stops within one read of its buffer.

// ErrNotRegular reports a source path that is neither a regular file nor
// a directory (a named pipe, a device, a socket): it is never read.
var ErrNotRegular = errors.New("not a regular file")

// Tree is a directory of sources, opened for reading as described above.
// Close it when done.
type Tree struct {
	root *os.Root
}

// OpenTree opens the directory dir (links in dir itself are followed:
// it is the caller's to name).
func OpenTree(dir string) (*Tree, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Tree{root: r}, nil
}

// Dir is the directory the tree was opened at, as named.
func (t *Tree) Dir() string { return t.root.Name() }

// Close closes the tree's directory; files opened from it stay open.
func (t *Tree) Close() error { return t.root.Close() }

// FS is the tree as an fs.FS (also fs.StatFS and fs.SubFS) whose files
// are read under ctx: once ctx is done, opens and reads fail with its
// cause. Opening anything but a regular file or a directory fails with
// ErrNotRegular, without blocking; a path whose links resolve outside
// the tree fails too. Safe for concurrent use.
func (t *Tree) FS(ctx context.Context) fs.FS { return treeFS{root: t.root, ctx: ctx, dir: "."} }

type treeFS struct {
	root *os.Root
	ctx  context.Context
	dir  string // the FS's root within the tree, slash-separated
}

func (f treeFS) name(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if err := f.ctx.Err(); err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: context.Cause(f.ctx)}
	}
	return path.Join(f.dir, name), nil
}

// Open opens name: a directory, or a regular file whose reads check the
// FS's context.
func (f treeFS) Open(name string) (fs.File, error) {
	full, err := f.name("open", name)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: a named pipe opens at once (with no writer, a blocking
	// open waits for one for ever); it is then refused below. A regular
	// file ignores the flag.
	file, err := f.root.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		_ = file.Close() // read-only, and failed already
		return nil, err
	}
	switch {
	case fi.IsDir():
		return file, nil
	case fi.Mode().IsRegular():
		return &ctxFile{f: file, ctx: f.ctx}, nil
	}
	_ = file.Close() // read-only, and refused
	return nil, &fs.PathError{Op: "open", Path: name, Err: NotRegularError(fi.Mode())}
}

// Stat returns what name is, following links that stay in the tree.
func (f treeFS) Stat(name string) (fs.FileInfo, error) {
	full, err := f.name("stat", name)
	if err != nil {
		return nil, err
	}
	return f.root.Stat(full)
}

// Sub is the subtree at dir.
func (f treeFS) Sub(dir string) (fs.FS, error) {
	full, err := f.name("sub", dir)
	if err != nil {
		return nil, err
	}
	return treeFS{root: f.root, ctx: f.ctx, dir: full}, nil
}

// ctxFile is a regular file of a tree whose reads check a context. It has
// no WriteTo, so that io.Copy reads it through Read.
type ctxFile struct {
	f   *os.File
	ctx context.Context
}

func (c *ctxFile) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.f.Read(p)
}

func (c *ctxFile) Stat() (fs.FileInfo, error) { return c.f.Stat() }
func (c *ctxFile) Close() error               { return c.f.Close() }

// NotRegularError is ErrNotRegular, naming what a file of mode m is
// instead.
func NotRegularError(m fs.FileMode) error {
	return fmt.Errorf("%w: %s", ErrNotRegular, KindOf(m))
}

// KindOf names what a file of mode m is, for messages: "a named pipe",
// "a symbolic link", "a directory", "a regular file", and so on.
func KindOf(m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return "a regular file"
	case fs.ModeDir:
		return "a directory"
	case fs.ModeSymlink:
		return "a symbolic link"
	case fs.ModeNamedPipe:
		return "a named pipe"
	case fs.ModeSocket:
		return "a socket"
	case fs.ModeDevice:
		return "a block device"
	case fs.ModeDevice | fs.ModeCharDevice, fs.ModeCharDevice:
		return "a character device"
	}
	return "not a regular file (mode " + m.String() + ")"
}

var _ interface {
	fs.StatFS
	fs.SubFS
} = treeFS{}

// RegularFiles returns the names (joined to dir) of the regular files
// directly in dir of fsys that match, in lexical order. Links are not
// followed (a link is not a regular file): a listing never leads out of
// the directory it lists, nor to a device or a pipe.
func RegularFiles(fsys fs.FS, dir string, match func(name string) bool) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && match(e.Name()) {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	return out, nil // fs.ReadDir sorts by name
}

// Dirs returns the names (joined to dir) of the directories directly in
// dir of fsys, in lexical order; links to directories are not followed.
func Dirs(fsys fs.FS, dir string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// FilesAt returns the regular files of fsys that match, depth directories
// below its root (RegularFiles of each directory Dirs finds there, level
// by level), directory by directory in lexical order. The root's error is
// returned; a directory below it that cannot be read is left out (as
// fs.Glob leaves it).
func FilesAt(fsys fs.FS, depth int, match func(name string) bool) ([]string, error) {
	dirs := []string{"."}
	for level := range depth {
		var next []string
		for _, d := range dirs {
			sub, err := Dirs(fsys, d)
			if err != nil && level == 0 {
				return nil, err
			}
			next = append(next, sub...)
		}
		dirs = next
	}
	var out []string
	for _, d := range dirs {
		names, err := RegularFiles(fsys, d, match)
		if err != nil && depth == 0 {
			return nil, err
		}
		out = append(out, names...)
	}
	return out, nil
}
