package vfs

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// ErrSymlink reports a symlink where the store expects a regular file or
// directory.
var ErrSymlink = errors.New("vfs: refusing symlink")

// ErrReplaced reports a file that was replaced (renamed over) between the
// check of its name and its opening; opening it again sees the new file.
var ErrReplaced = errors.New("vfs: file replaced while opening")

// ErrNotRegular is returned when a name to be opened is neither a regular
// file nor a directory (a FIFO, socket or device planted in a store): a
// FIFO would block the opener forever, a device would feed it endless
// bytes. Nothing in a store is ever anything else.
var ErrNotRegular = errors.New("vfs: refusing a file that is not a regular file or directory")

// FS is a file system rooted at a store root.
type FS interface {
	// OpenFile opens name with os.OpenFile flags. It never follows a
	// symlink (ErrSymlink).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Mkdir creates a directory.
	Mkdir(name string, perm fs.FileMode) error
	// Rename renames oldname to newname, replacing a file at newname.
	Rename(oldname, newname string) error
	// RenameNoReplace renames oldname to newname, failing with an error
	// that matches fs.ErrExist if newname exists (also an empty
	// directory).
	RenameNoReplace(oldname, newname string) error
	// Link makes newname another name (a hard link) of the regular file
	// oldname, failing with an error that matches fs.ErrExist if newname
	// exists, and with ErrSymlink or ErrNotRegular for a symlink or
	// anything but a regular file at oldname. Like a creation, the new
	// name is durable once its directory is synced.
	Link(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything under it.
	RemoveAll(name string) error
	// Lstat describes name without following a symlink.
	Lstat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory in name order.
	ReadDir(name string) ([]fs.DirEntry, error)
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable. "." is the root.
	SyncDir(name string) error
	// SyncAll makes durable, at once, the content of each regular file
	// and the entries of each directory that names lists, as Sync and
	// SyncDir of each would. On Linux it is one syncfs(2) of the root's
	// file system (which flushes everything written there, names or not);
	// elsewhere each name is synced in turn. A batch of new files is so
	// made durable for the cost of one flush.
	SyncAll(names []string) error
}

// File is an open file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt // not on an O_APPEND descriptor
	io.Closer
	// Name returns the name it was opened with.
	Name() string
	// Stat describes the open file.
	Stat() (fs.FileInfo, error)
	// Sync makes data and metadata durable (fsync).
	Sync() error
	// Datasync makes data and the metadata needed to read it (the size)
	// durable (fdatasync).
	Datasync() error
	// Truncate changes the size.
	Truncate(size int64) error
}

// Identity identifies a file across renames: device and inode.
type Identity struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// State is what a stat tells of a file that is appended to or replaced
// whole: its identity, size and modification time. Two stats of one file
// give different States when it was replaced, grew, was cut short or was
// rewritten in place (which moves its modification time). The zero State
// stands for no file.
type State struct {
	Identity
	Size  int64
	MTime int64 // nanoseconds since the Unix epoch
}

// StateOf returns the State of the file fi describes.
func StateOf(fi fs.FileInfo) State {
	return State{Identity: IdentityOf(fi), Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
}

// IdentityOf returns the identity of the file fi describes. Implementations
// of FS return FileInfos whose Sys is a *syscall.Stat_t or an Identity.
func IdentityOf(fi fs.FileInfo) Identity {
	switch s := fi.Sys().(type) {
	case *syscall.Stat_t:
		return Identity{Dev: statDev(s), Ino: s.Ino}
	case Identity:
		return s
	case *Identity:
		return *s
	}
	return Identity{}
}

// Links returns the number of hard links to the file fi describes, or 1
// when its FileInfo does not say (the simulation does not count them).
func Links(fi fs.FileInfo) uint64 {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		return statLinks(s)
	}
	return 1
}

// ChangeTimeOf returns the status change time of the file fi describes
// (ctime, which every change of its entries or attributes sets to now and
// which no call sets to another time), in nanoseconds since 1970, or its
// modification time when its FileInfo does not say (the simulation).
func ChangeTimeOf(fi fs.FileInfo) int64 {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		return statCtime(s)
	}
	return fi.ModTime().UnixNano()
}

// ReadDirNames lists the names in directory name, in no particular order
// and without their types: the cheapest listing (on the real file system
// one getdents pass, a few milliseconds for ten thousand entries, where
// ReadDir takes several times that). An FS without a cheaper way lists
// with ReadDir.
func ReadDirNames(fsys FS, name string) ([]string, error) {
	if r, ok := fsys.(interface {
		readDirNames(string) ([]string, error)
	}); ok {
		return r.readDirNames(name)
	}
	entries, err := fsys.ReadDir(name)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// Probe describes name as Lstat does, for comparing with a state recorded
// earlier (an identity, a size, a time) to find what changed: on the real
// file system in one system call, where Lstat checks every directory on
// the way for a symlink. A name below a directory that was replaced by a
// symlink may thus be described as what that points to; what Probe finds
// changed is then read through the FS, which refuses it. An FS without a
// cheaper way uses Lstat.
func Probe(fsys FS, name string) (fs.FileInfo, error) {
	if p, ok := fsys.(interface {
		probe(string) (fs.FileInfo, error)
	}); ok {
		return p.probe(name)
	}
	return fsys.Lstat(name)
}

// ReadFile reads a whole file, refusing one larger than limit bytes.
func ReadFile(fsys FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(name, syscall.O_RDONLY, 0)
	// A file replaced by rename between the check of its name and its
	// opening: open the new one.
	for i := 0; i < 5 && errors.Is(err, ErrReplaced); i++ {
		f, err = fsys.OpenFile(name, syscall.O_RDONLY, 0)
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	tooLarge := &fs.PathError{Op: "read", Path: name, Err: errors.New("file larger than limit")}
	// A file already over the limit is refused unread.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge // it grew while being read
	}
	return b, nil
}

// WriteFileAtomic replaces name with data: write a temporary file beside it,
// optionally fsync it, rename it over name, and optionally fsync the
// directory. With durable false the replacement is atomic but not durable
// (a crash may leave the old file, the new one, or an empty or torn one):
// callers must treat such files as caches. The temporary file is removed
// on failure.
func WriteFileAtomic(fsys FS, dir, base string, data []byte, perm fs.FileMode, durable bool, tmpSuffix string) error {
	return Replace{Dir: dir, Tmp: "." + base + tmpSuffix + ".tmp", Name: base, Perm: perm, SyncFile: durable, SyncDir: durable}.Write(fsys, data)
}

// Replace is one replacement of a file through a temporary one: the one
// owner of "temporary file, fsync, rename" for every file the stores
// write whole (settings, manifests, summaries, catalogs, blobs).
type Replace struct {
	Dir  string      // the directory both files are in ("" or "." for the root)
	Tmp  string      // the temporary file's name in Dir, created new (O_EXCL)
	Name string      // the file's name in Dir, replaced by the rename
	Perm fs.FileMode // the new file's permissions
	// SyncFile syncs the temporary file before the rename, so that the
	// rename never publishes a torn file; SyncDir syncs Dir after it, so
	// that the rename itself survives a crash.
	SyncFile, SyncDir bool
}

// Write writes data to r.Tmp, syncs it when r.SyncFile, renames it onto
// r.Name and syncs the directory when r.SyncDir. On any failure the
// temporary file is removed and the error is the first one met.
func (r Replace) Write(fsys FS, data []byte) (err error) {
	tmp := join(r.Dir, r.Tmp)
	f, err := fsys.OpenFile(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, r.Perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = fsys.Remove(tmp)
		}
	}()
	n, err := f.Write(data)
	if err == nil && n < len(data) {
		err = io.ErrShortWrite
	}
	if err == nil && r.SyncFile {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = fsys.Rename(tmp, join(r.Dir, r.Name)); err != nil {
		return err
	}
	if r.SyncDir {
		return fsys.SyncDir(r.Dir)
	}
	return nil
}

func join(dir, base string) string {
	if dir == "" || dir == "." {
		return base
	}
	return dir + "/" + base
}

// SubFS is an FS rooted at a subdirectory of another, which must be closed
// after use.
type SubFS interface {
	FS
	Close() error
}

// Sub returns an FS rooted at directory dir of fsys. Names inside it are
// relative to dir. For the real file system it holds the directory open,
// so that operations on names in it are single system calls relative to
// that descriptor; for others it prefixes names.
func Sub(fsys FS, dir string) (SubFS, error) {
	if s, ok := fsys.(interface{ sub(string) (SubFS, error) }); ok {
		return s.sub(dir)
	}
	fi, err := fsys.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "sub", Path: dir, Err: ErrSymlink}
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "sub", Path: dir, Err: syscall.ENOTDIR}
	}
	return prefixFS{FS: fsys, dir: dir}, nil
}

// prefixFS is Sub for file systems without directory descriptors.
type prefixFS struct {
	FS
	dir string
}

func (p prefixFS) name(n string) string {
	if n == "" || n == "." {
		return p.dir
	}
	return p.dir + "/" + n
}

func (p prefixFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	return p.FS.OpenFile(p.name(name), flag, perm)
}
func (p prefixFS) Mkdir(name string, perm fs.FileMode) error { return p.FS.Mkdir(p.name(name), perm) }
func (p prefixFS) Rename(o, n string) error                  { return p.FS.Rename(p.name(o), p.name(n)) }
func (p prefixFS) RenameNoReplace(o, n string) error {
	return p.FS.RenameNoReplace(p.name(o), p.name(n))
}
func (p prefixFS) Link(o, n string) error                     { return p.FS.Link(p.name(o), p.name(n)) }
func (p prefixFS) Remove(name string) error                   { return p.FS.Remove(p.name(name)) }
func (p prefixFS) RemoveAll(name string) error                { return p.FS.RemoveAll(p.name(name)) }
func (p prefixFS) Lstat(name string) (fs.FileInfo, error)     { return p.FS.Lstat(p.name(name)) }
func (p prefixFS) ReadDir(name string) ([]fs.DirEntry, error) { return p.FS.ReadDir(p.name(name)) }
func (p prefixFS) SyncDir(name string) error                  { return p.FS.SyncDir(p.name(name)) }
func (p prefixFS) SyncAll(names []string) error {
	full := make([]string, len(names))
	for i, n := range names {
		full[i] = p.name(n)
	}
	return p.FS.SyncAll(full)
}
func (p prefixFS) Close() error { return nil }

// errUnsupported is what Clone returns where it cannot clone.
var errUnsupported = errors.ErrUnsupported
