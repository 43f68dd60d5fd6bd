package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sim is an in-memory FS that models what survives a power loss, unkindly
// (see Crash). Without a crash it behaves like OS on Linux: the same open
// flags, errors (matching fs.ErrNotExist, fs.ErrExist, syscall.ENOTEMPTY,
// ...), rename rules (Rename never replaces a directory, like os.Rename)
// and symlink refusal (ErrSymlink). Differences from OS:
//
//   - a symlink as a leading path component is refused (ErrSymlink) by
//     every operation; os.Root would follow it for Lstat, Remove,
//     RemoveAll and Rename when it stays inside the root;
//   - permission bits are recorded as given (no umask) and not enforced;
//   - SyncDir of a non-directory fails with ENOTDIR (OS would fsync the
//     file);
//   - directories report size 0; O_SYNC and O_DSYNC are refused.
//
// FileInfos carry an Identity (Sys), stable per inode, so IdentityOf works.
// A Sim is safe for concurrent use.
type Sim struct {
	mu      sync.Mutex
	root    *inode
	nextIno uint64
	meta    []*metaOp // pending directory-entry operations, oldest first
	now     func() time.Time
	hook    func(op Op, name string)
	syncs   int
}

var _ FS = (*Sim)(nil)

// simDev is the device number of every Sim inode.
const simDev = 0x5157

// simPage is the granularity at which unsynced writes survive a crash.
const simPage = 4096

type inode struct {
	ino   uint64
	mode  fs.FileMode // type bits and permissions
	mtime time.Time

	// Regular file: current content, durable content, and the operations
	// applied since the last sync, oldest first. When shared, dur aliases
	// the start of data's array (set by a sync): data is copied before a
	// change below len(dur) (see own). Only data is ever written to.
	data    []byte
	dur     []byte
	shared  bool
	pending []fileOp

	// Directory: current and durable entries.
	entries    map[string]*inode
	durEntries map[string]*inode

	// Symlink.
	target string
}

// fileOp is an unsynced write (data != nil) or truncate.
type fileOp struct {
	off       int64 // write offset, or the new size of a truncate
	data      []byte
	trunc     bool
	sizeAfter int64 // file size after the operation
}

type metaKind int

const (
	metaLink   metaKind = iota // name → node appears in dir
	metaUnlink                 // name → node disappears from dir
	metaRename                 // dir/name → dir2/name2, replacing what was there
)

// metaOp is an unsynced change of directory entries.
type metaOp struct {
	kind  metaKind
	dir   *inode
	name  string
	dir2  *inode
	name2 string
	node  *inode
	done  bool
}

func (op *metaOp) touches(d *inode) bool { return op.dir == d || op.dir2 == d }

func (n *inode) isDir() bool     { return n.mode.IsDir() }
func (n *inode) isSymlink() bool { return n.mode&fs.ModeSymlink != 0 }
func (n *inode) isFile() bool    { return n.mode.IsRegular() }

// NewSim returns a Sim holding an empty, durable root directory ".". Its
// clock is time.Now (see SetClock).
func NewSim() *Sim {
	s := &Sim{nextIno: 2, now: time.Now}
	s.root = s.newInode(fs.ModeDir | 0o755)
	s.root.durEntries = map[string]*inode{}
	return s
}

// SetClock sets the clock modification times are taken from.
func (s *Sim) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// OnSync sets fn to be called before each Sync, Datasync and SyncDir (and
// Sync of an open directory) takes effect, with the name the file was
// opened with or the directory name. The Sim lock is not held: fn may call
// Crash, Snapshot or SyncCount. Nil removes the hook.
func (s *Sim) OnSync(fn func(op Op, name string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = fn
}

// SyncCount reports the number of sync points reached so far, counting
// the one whose OnSync hook is running.
func (s *Sim) SyncCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncs
}

func (s *Sim) newInode(mode fs.FileMode) *inode {
	n := &inode{ino: s.nextIno, mode: mode, mtime: s.now()}
	s.nextIno++
	if n.isDir() {
		n.entries = map[string]*inode{}
		n.durEntries = map[string]*inode{}
	}
	return n
}

var (
	errEmptyPath   = errors.New("empty path")
	errPathEscapes = errors.New("path escapes from parent")
)

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// lookup is the result of resolving a name: the parent directory, the last
// component and the node it names (nil if none). The root has no parent.
type lookup struct {
	dir  *inode
	base string
	node *inode
}

// resolve walks name. It refuses a symlink among the leading components
// (ErrSymlink), and a symlink as the last one too if final is set. A
// trailing slash requires a directory. Errors are *fs.PathError with op.
func (s *Sim) resolve(op, name string, final bool) (lookup, error) {
	if name == "" {
		return lookup{}, pathErr(op, name, errEmptyPath)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return lookup{}, pathErr(op, name, syscall.EINVAL)
	}
	if name[0] == '/' {
		return lookup{}, pathErr(op, name, errPathEscapes)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return lookup{}, pathErr(op, name, errPathEscapes)
	}
	if clean == "." {
		return lookup{base: ".", node: s.root}, nil
	}
	parts := strings.Split(clean, "/")
	dir := s.root
	for i, p := range parts[:len(parts)-1] {
		next := dir.entries[p]
		switch {
		case next == nil:
			return lookup{}, pathErr(op, name, syscall.ENOENT)
		case next.isSymlink():
			return lookup{}, pathErr("open", strings.Join(parts[:i+1], "/"), ErrSymlink)
		case !next.isDir():
			return lookup{}, pathErr(op, name, syscall.ENOTDIR)
		}
		dir = next
	}
	l := lookup{dir: dir, base: parts[len(parts)-1]}
	l.node = dir.entries[l.base]
	if l.node != nil {
		if final && l.node.isSymlink() {
			return lookup{}, pathErr("open", clean, ErrSymlink)
		}
		if strings.HasSuffix(name, "/") && !l.node.isDir() {
			return lookup{}, pathErr(op, name, syscall.ENOTDIR)
		}
	}
	return l, nil
}

// link, unlink and move change current entries and record the change as
// pending until the directories involved are synced.
func (s *Sim) link(dir *inode, name string, n *inode) {
	dir.entries[name] = n
	dir.mtime = s.now()
	s.meta = append(s.meta, &metaOp{kind: metaLink, dir: dir, name: name, node: n})
}

func (s *Sim) unlink(dir *inode, name string) {
	n := dir.entries[name]
	delete(dir.entries, name)
	dir.mtime = s.now()
	s.meta = append(s.meta, &metaOp{kind: metaUnlink, dir: dir, name: name, node: n})
}

func (s *Sim) move(dir *inode, name string, dir2 *inode, name2 string) {
	n := dir.entries[name]
	delete(dir.entries, name)
	dir2.entries[name2] = n
	now := s.now()
	dir.mtime, dir2.mtime = now, now
	s.meta = append(s.meta, &metaOp{kind: metaRename, dir: dir, name: name, dir2: dir2, name2: name2, node: n})
}

const knownOpenFlags = os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND |
	syscall.O_CLOEXEC | syscall.O_NOFOLLOW | syscall.O_DIRECTORY | syscall.O_NONBLOCK

func (s *Sim) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	const op = "openat"
	if flag&^knownOpenFlags != 0 {
		return nil, pathErr(op, name, fmt.Errorf("vfs.Sim: unsupported open flags %#x", flag&^knownOpenFlags))
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.resolve(op, name, true)
	if err != nil {
		return nil, err
	}
	n := l.node
	switch {
	case n == nil:
		if flag&os.O_CREATE == 0 || l.dir == nil {
			return nil, pathErr(op, name, syscall.ENOENT)
		}
		if strings.HasSuffix(name, "/") {
			return nil, pathErr(op, name, syscall.EISDIR)
		}
		n = s.newInode(perm & fs.ModePerm)
		s.link(l.dir, l.base, n)
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, pathErr(op, name, syscall.EEXIST)
	case n.isDir():
		if acc != os.O_RDONLY || flag&(os.O_CREATE|os.O_TRUNC) != 0 {
			return nil, pathErr(op, name, syscall.EISDIR)
		}
	case flag&syscall.O_DIRECTORY != 0:
		return nil, pathErr(op, name, syscall.ENOTDIR)
	case flag&os.O_TRUNC != 0:
		s.truncate(n, 0)
	}
	return &simFile{
		s: s, n: n, name: name,
		read:   acc == os.O_RDONLY || acc == os.O_RDWR,
		write:  acc == os.O_WRONLY || acc == os.O_RDWR,
		append: flag&os.O_APPEND != 0,
	}, nil
}

func (s *Sim) Mkdir(name string, perm fs.FileMode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.makeEntry("mkdirat", name, fs.ModeDir|perm&fs.ModePerm)
	return err
}

// Symlink creates newname as a symlink to oldname, so tests can plant one.
func (s *Sim) Symlink(oldname, newname string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.makeEntry("symlinkat", newname, fs.ModeSymlink|0o777)
	if err != nil {
		return err
	}
	n.target = oldname
	return nil
}

// makeEntry links a new inode of mode at name, which must not exist, and
// returns it (s.mu held).
func (s *Sim) makeEntry(op, name string, mode fs.FileMode) (*inode, error) {
	l, err := s.resolve(op, name, false)
	if err != nil {
		return nil, err
	}
	if l.node != nil || l.dir == nil {
		return nil, pathErr(op, name, syscall.EEXIST)
	}
	n := s.newInode(mode)
	s.link(l.dir, l.base, n)
	return n, nil
}

func (s *Sim) Link(oldname, newname string) error {
	const op = "linkat"
	s.mu.Lock()
	defer s.mu.Unlock()
	ol, err := s.resolve(op, oldname, true)
	if err != nil {
		return err
	}
	switch {
	case ol.node == nil:
		return pathErr(op, oldname, syscall.ENOENT)
	case !ol.node.isFile():
		return pathErr(op, oldname, ErrNotRegular)
	}
	nl, err := s.resolve(op, newname, false)
	if err != nil {
		return err
	}
	if nl.node != nil || nl.dir == nil {
		return pathErr(op, newname, syscall.EEXIST)
	}
	s.link(nl.dir, nl.base, ol.node)
	return nil
}

func (s *Sim) Rename(oldname, newname string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rename("renameat", oldname, newname, false)
}

// RenameNoReplace is like OS: both names must have the same parent.
func (s *Sim) RenameNoReplace(oldname, newname string) error {
	if parent(oldname) != parent(newname) {
		return fmt.Errorf("vfs: RenameNoReplace across directories: %s → %s", oldname, newname)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rename("renamenoreplace", oldname, newname, true)
}

func (s *Sim) rename(op, oldname, newname string, noReplace bool) error {
	fail := func(err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, ErrSymlink) {
			return err
		}
		if pe != nil {
			err = pe.Err
		}
		return &os.LinkError{Op: op, Old: oldname, New: newname, Err: err}
	}
	src, err := s.resolve(op, oldname, false)
	if err != nil {
		return fail(err)
	}
	if src.node == nil {
		return fail(syscall.ENOENT)
	}
	dst, err := s.resolve(op, newname, false)
	if err != nil {
		return fail(err)
	}
	if noReplace {
		if dst.node != nil {
			return fail(syscall.EEXIST)
		}
	} else if dst.node != nil && dst.node.isDir() {
		// os.Rename and os.Root.Rename never replace a directory.
		return fail(syscall.EEXIST)
	}
	switch {
	case src.dir == nil:
		return fail(syscall.EBUSY)
	case dst.dir == nil:
		return fail(syscall.EEXIST)
	case dst.node == src.node:
		return nil // the same file: rename(2) does nothing
	case src.node.isDir() && dst.node != nil:
		return fail(syscall.ENOTDIR)
	case src.node.isDir() && s.within(dst.dir, src.node):
		return fail(syscall.EINVAL)
	}
	s.move(src.dir, src.base, dst.dir, dst.base)
	return nil
}

// within reports whether d is dir or below it.
func (s *Sim) within(d, dir *inode) bool {
	// Walk down from dir: the tree has no parent pointers.
	if d == dir {
		return true
	}
	for _, c := range dir.entries {
		if c.isDir() && s.within(d, c) {
			return true
		}
	}
	return false
}

func (s *Sim) Remove(name string) error {
	const op = "removeat"
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.resolve(op, name, false)
	if err != nil {
		return err
	}
	switch {
	case l.dir == nil:
		return pathErr(op, name, syscall.EINVAL)
	case l.node == nil:
		return pathErr(op, name, syscall.ENOENT)
	case l.node.isDir() && len(l.node.entries) > 0:
		return pathErr(op, name, syscall.ENOTEMPTY)
	}
	s.unlink(l.dir, l.base)
	return nil
}

func (s *Sim) RemoveAll(name string) error {
	const op = "RemoveAll"
	name = strings.TrimRight(name, "/")
	if name == "." || strings.HasSuffix(name, "/.") {
		return pathErr(op, name, syscall.EINVAL)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.resolve(op, name, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.dir == nil {
		return pathErr(op, name, syscall.EINVAL)
	}
	if l.node != nil {
		s.removeTree(l.dir, l.base)
	}
	return nil
}

// removeTree unlinks dir/name and everything below it, children first.
func (s *Sim) removeTree(dir *inode, name string) {
	n := dir.entries[name]
	if n.isDir() {
		for _, c := range sortedNames(n.entries) {
			s.removeTree(n, c)
		}
	}
	s.unlink(dir, name)
}

func (s *Sim) Lstat(name string) (fs.FileInfo, error) {
	const op = "statat"
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.resolve(op, name, false)
	if err != nil {
		return nil, err
	}
	if l.node == nil {
		return nil, pathErr(op, name, syscall.ENOENT)
	}
	return l.node.info(l.base), nil
}

func (s *Sim) ReadDir(name string) ([]fs.DirEntry, error) {
	const op = "openat"
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" {
		return nil, pathErr("readdir", name, fs.ErrInvalid)
	}
	l, err := s.resolve(op, name, true)
	if err != nil {
		return nil, err
	}
	switch {
	case l.node == nil:
		return nil, pathErr(op, name, syscall.ENOENT)
	case !l.node.isDir():
		return nil, pathErr("readdirent", name, syscall.ENOTDIR)
	}
	names := sortedNames(l.node.entries)
	out := make([]fs.DirEntry, len(names))
	for i, nm := range names {
		out[i] = simDirEntry{l.node.entries[nm].info(nm)}
	}
	return out, nil
}

func (s *Sim) SyncDir(name string) error {
	const op = "syncdir"
	if name == "" {
		name = "."
	}
	s.mu.Lock()
	l, err := s.resolve(op, name, true)
	switch {
	case err != nil:
	case l.node == nil:
		err = pathErr(op, name, syscall.ENOENT)
	case !l.node.isDir():
		err = pathErr(op, name, syscall.ENOTDIR)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.syncPoint(OpSyncDir, name, l.node)
	return nil
}

// SyncAll is one sync point, named after its first name ("." when none),
// that makes each name durable as Sync or SyncDir would: exactly the
// names given, which is what the sync name by name does (on Linux OS
// flushes the whole file system). Every name must exist.
func (s *Sim) SyncAll(names []string) error {
	const op = "syncall"
	nodes := make([]*inode, 0, len(names))
	s.mu.Lock()
	for _, name := range names {
		l, err := s.resolve(op, name, true)
		if err == nil && l.node == nil {
			err = pathErr(op, name, syscall.ENOENT)
		}
		if err != nil {
			s.mu.Unlock()
			return err
		}
		nodes = append(nodes, l.node)
	}
	s.mu.Unlock()
	first := "."
	if len(names) > 0 {
		first = names[0]
	}
	s.syncPoint(OpSyncAll, first, nodes...)
	return nil
}

// syncPoint counts a sync point, runs the hook without the lock, then makes
// each of nodes durable: a file's content, or a directory's entries.
func (s *Sim) syncPoint(op Op, name string, nodes ...*inode) {
	s.mu.Lock()
	s.syncs++
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(op, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range nodes {
		if n.isDir() {
			s.syncDir(n)
		} else {
			n.dur, n.shared = n.data, true
			n.pending = nil
		}
	}
}

// syncDir makes d's current entries durable. A rename between d and
// another directory is committed as a whole, together with the earlier
// pending operations of the other directory (as a journal would): a
// rename never leaves a file in neither directory.
func (s *Sim) syncDir(d *inode) {
	for i := 0; i < len(s.meta); i++ {
		if op := s.meta[i]; !op.done && op.touches(d) {
			s.commit(op)
		}
	}
	d.durEntries = cloneEntries(d.entries)
	s.meta = slices.DeleteFunc(s.meta, func(op *metaOp) bool { return op.done })
}

// commit makes op durable, after the earlier pending operations on the
// directories it touches.
func (s *Sim) commit(op *metaOp) {
	for _, p := range s.meta {
		if p == op {
			break
		}
		if !p.done && (p.touches(op.dir) || (op.dir2 != nil && p.touches(op.dir2))) {
			s.commit(p)
		}
	}
	applyMeta(op, func(d *inode) map[string]*inode {
		if d.durEntries == nil {
			d.durEntries = map[string]*inode{}
		}
		return d.durEntries
	})
	op.done = true
}

// applyMeta applies op to the entries that view returns, skipping what no
// longer applies: a link whose name is taken, an unlink or rename whose
// source is not there.
func applyMeta(op *metaOp, view func(*inode) map[string]*inode) {
	m := view(op.dir)
	switch op.kind {
	case metaLink:
		if _, ok := m[op.name]; !ok {
			m[op.name] = op.node
		}
	case metaUnlink:
		if m[op.name] == op.node {
			delete(m, op.name)
		}
	case metaRename:
		if m[op.name] == op.node {
			delete(m, op.name)
			view(op.dir2)[op.name2] = op.node
		}
	}
}

// own gives n.data its own array before a change at offset lo or beyond,
// if that change would show through n.dur.
func (n *inode) own(lo int64) {
	if n.shared && lo < int64(len(n.dur)) {
		n.data = bytes.Clone(n.data)
		n.shared = false
	}
}

func (s *Sim) truncate(n *inode, size int64) {
	if size > int64(len(n.data)) {
		n.own(int64(len(n.data))) // growth zeroes from the current end
	}
	n.data = resize(n.data, size)
	n.pending = append(n.pending, fileOp{off: size, trunc: true, sizeAfter: size})
	n.mtime = s.now()
}

func (s *Sim) write(n *inode, off int64, p []byte) {
	n.own(min(off, int64(len(n.data)))) // a gap is zeroed from the current end
	n.data = writeAt(n.data, off, p)
	n.pending = append(n.pending, fileOp{off: off, data: bytes.Clone(p), sizeAfter: int64(len(n.data))})
	n.mtime = s.now()
}

// resize sets the length of b, zero-filling any growth.
func resize(b []byte, size int64) []byte {
	n := int(size)
	switch {
	case n <= len(b):
		return b[:n]
	case n <= cap(b):
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

func writeAt(b []byte, off int64, p []byte) []byte {
	if end := off + int64(len(p)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[off:], p)
	return b
}

// ReadFile returns a copy of the current content of the regular file name.
func (s *Sim) ReadFile(name string) ([]byte, error) {
	const op = "open"
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.resolve(op, name, true)
	switch {
	case err != nil:
		return nil, err
	case l.node == nil:
		return nil, pathErr(op, name, syscall.ENOENT)
	case l.node.isDir():
		return nil, pathErr("read", name, syscall.EISDIR)
	}
	return append([]byte{}, l.node.data...), nil // non-nil, also when empty
}

// Tree lists every path, sorted: directories end in "/", symlinks read
// "name -> target". The root is not listed.
func (s *Sim) Tree() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	var walk func(prefix string, d *inode)
	walk = func(prefix string, d *inode) {
		for _, nm := range sortedNames(d.entries) {
			c := d.entries[nm]
			p := prefix + nm
			switch {
			case c.isDir():
				out = append(out, p+"/")
				walk(p+"/", c)
			case c.isSymlink():
				out = append(out, p+" -> "+c.target)
			default:
				out = append(out, p)
			}
		}
	}
	walk("", s.root)
	slices.Sort(out)
	return out
}

func sortedNames(m map[string]*inode) []string {
	names := make([]string, 0, len(m))
	for nm := range m {
		names = append(names, nm)
	}
	slices.Sort(names)
	return names
}

func cloneEntries(m map[string]*inode) map[string]*inode {
	c := make(map[string]*inode, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (n *inode) info(name string) simInfo {
	fi := simInfo{name: name, mode: n.mode, mtime: n.mtime, id: Identity{Dev: simDev, Ino: n.ino}}
	switch {
	case n.isFile():
		fi.size = int64(len(n.data))
	case n.isSymlink():
		fi.size = int64(len(n.target))
	}
	return fi
}

type simInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	id    Identity
}

func (fi simInfo) Name() string       { return fi.name }
func (fi simInfo) Size() int64        { return fi.size }
func (fi simInfo) Mode() fs.FileMode  { return fi.mode }
func (fi simInfo) ModTime() time.Time { return fi.mtime }
func (fi simInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi simInfo) Sys() any           { return fi.id }

type simDirEntry struct{ fi simInfo }

func (e simDirEntry) Name() string               { return e.fi.name }
func (e simDirEntry) IsDir() bool                { return e.fi.IsDir() }
func (e simDirEntry) Type() fs.FileMode          { return e.fi.mode.Type() }
func (e simDirEntry) Info() (fs.FileInfo, error) { return e.fi, nil }
func (e simDirEntry) String() string             { return fs.FormatDirEntry(e) }

// simFile is an open file description: its own offset and access mode.
type simFile struct {
	s      *Sim
	n      *inode
	name   string
	read   bool
	write  bool
	append bool
	off    int64
	closed bool
}

func (f *simFile) Name() string { return f.name }

// check validates an operation under the lock.
func (f *simFile) check(op string, needRead, needWrite bool) error {
	switch {
	case f.closed:
		return pathErr(op, f.name, fs.ErrClosed)
	case needRead && !f.read, needWrite && !f.write:
		return pathErr(op, f.name, syscall.EBADF)
	case needRead && f.n.isDir():
		return pathErr(op, f.name, syscall.EISDIR)
	}
	return nil
}

func (f *simFile) Read(p []byte) (int, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("read", true, false); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[f.off:])
	f.off += int64(k)
	return k, nil
}

func (f *simFile) ReadAt(p []byte, off int64) (int, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("read", true, false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, errors.New("negative offset"))
	}
	if off >= int64(len(f.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *simFile) Write(p []byte) (int, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("write", false, true); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.append {
		f.off = int64(len(f.n.data))
	}
	f.s.write(f.n, f.off, p)
	f.off += int64(len(p))
	return len(p), nil
}

func (f *simFile) WriteAt(p []byte, off int64) (int, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if err := f.check("writeat", false, true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("writeat", f.name, errors.New("negative offset"))
	}
	if f.append {
		// Like os.File.WriteAt: refused on an O_APPEND descriptor.
		return 0, pathErr("writeat", f.name, errors.New("invalid use of WriteAt on file opened with O_APPEND"))
	}
	if len(p) == 0 {
		return 0, nil
	}
	f.s.write(f.n, off, p)
	return len(p), nil
}

func (f *simFile) Close() error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func (f *simFile) Stat() (fs.FileInfo, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.closed {
		return nil, pathErr("stat", f.name, fs.ErrClosed)
	}
	return f.n.info(base(f.name)), nil
}

func (f *simFile) Sync() error     { return f.sync(OpSync) }
func (f *simFile) Datasync() error { return f.sync(OpDatasync) }

func (f *simFile) sync(op Op) error {
	f.s.mu.Lock()
	closed := f.closed
	f.s.mu.Unlock()
	if closed {
		return pathErr(string(op), f.name, fs.ErrClosed)
	}
	f.s.syncPoint(op, f.name, f.n)
	return nil
}

func (f *simFile) Truncate(size int64) error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	switch {
	case f.closed:
		return pathErr("truncate", f.name, fs.ErrClosed)
	case !f.write || f.n.isDir() || size < 0:
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.s.truncate(f.n, size)
	return nil
}
