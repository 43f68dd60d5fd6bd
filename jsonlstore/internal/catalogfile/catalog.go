package catalogfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/lease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// File and directory names of the catalog, inside the store root.
const (
	// Dir is the catalog's directory under the store root.
	Dir = ".catalog"
	// Path is the catalog file.
	Path = Dir + "/catalog"
	// RootPath is the root file: the root directory's state when someone
	// compared it with the catalog's entries.
	RootPath = Dir + "/root"
	lockPath = Dir + "/lock"
	// MarksDir holds the holders' marks, <id>.<generation>.
	MarksDir = Dir + "/marks"
	// The temporary files vfs.WriteFileAtomic writes them through: prefix,
	// layout.RandomSuffix, layout.TmpSuffix.
	catalogTemp = ".catalog-"
	rootTemp    = ".root-"
)

// compactMarks is how many marks beyond those the catalog's writer kept (of
// sessions it saw held) make a listing rewrite the catalog: each costs
// every listing a stat, the rewrite tens of milliseconds once.
const compactMarks = 32

// Catalog is the catalog of one store root: its files, its marks, and
// the catalog file read last, shared by the listings of a store while the
// file on disk stays the same. It is safe for concurrent use.
type Catalog struct {
	root *layout.Root
	host Host

	mu     sync.Mutex
	cached *Loaded // the catalog read last
}

// Host is what the catalog needs of the store it keeps, and may not
// reach itself: the leases (a writer of the catalog reads a marked
// session only after it saw its lease free) and the store's state.
type Host interface {
	// Lease reports session id's lease status, computed now.
	Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error)
	// TryLock takes an exclusive lock on the existing file at the absolute
	// path name without waiting: ErrLocked when someone has it. unlock
	// drops it.
	TryLock(name string) (unlock func(), err error)
	// Closed reports whether the store was closed (nothing is rewritten
	// after).
	Closed() bool
}

// ErrLocked reports that another process holds the catalog's lock (the
// store's leaser's lease.ErrLocked).
var ErrLocked = lease.ErrLocked

// New returns the catalog of root, kept for host.
func New(root *layout.Root, host Host) *Catalog { return &Catalog{root: root, host: host} }

// Close forgets the cached catalog file.
func (c *Catalog) Close() { c.cache(nil) }

// Loaded is a catalog file read into memory (its header and
// entries), open for its summaries. It is shared by the listings of a
// store while the file on disk stays the same, and closed when the last
// of them is done with it after it was replaced.
type Loaded struct {
	F     *catalog.File
	file  vfs.File
	state vfs.State
	refs  atomic.Int32
}

// Release gives back a reference that Open returned.
func (c *Loaded) Release() {
	if c.refs.Add(-1) == 0 {
		_ = c.file.Close() // read-only
	}
}

// LogStateOf is the catalog's record of the log fi describes.
func LogStateOf(fi fs.FileInfo) catalog.LogState { return logState(vfs.StateOf(fi)) }

// logState is the catalog's record of a log in state st.
func logState(st vfs.State) catalog.LogState {
	return catalog.LogState{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.MTime}
}

// Current is logfile.Current, with the state of the log as the catalog
// records it.
func Current(ctx context.Context, root *layout.Root, id session.SessionID) (summary.Summary, catalog.LogState, error) {
	sum, st, err := logfile.Current(ctx, root, id)
	return sum, logState(st), err
}

// current is Current, refused once the store is closed (as every read of
// a session is).
func (c *Catalog) current(ctx context.Context, id session.SessionID) (summary.Summary, catalog.LogState, error) {
	if c.host.Closed() {
		return summary.Summary{}, catalog.LogState{}, sessionstore.ErrClosed
	}
	return Current(ctx, c.root, id)
}

// fromLog is logfile.FromLog, with the state of the log as the catalog
// records it, refused once the store is closed.
func (c *Catalog) fromLog(ctx context.Context, id session.SessionID) (summary.Summary, catalog.LogState, error) {
	if c.host.Closed() {
		return summary.Summary{}, catalog.LogState{}, sessionstore.ErrClosed
	}
	sum, st, err := logfile.FromLog(ctx, c.root, id)
	return sum, logState(st), err
}

// DirStateOf is the catalog's record of the directory fi describes.
func DirStateOf(fi fs.FileInfo) catalog.DirState {
	id := vfs.IdentityOf(fi)
	return catalog.DirState{Dev: id.Dev, Ino: id.Ino, Nlink: vfs.Links(fi), Size: fi.Size(),
		Mtime: fi.ModTime().UnixNano(), Ctime: vfs.ChangeTimeOf(fi)}
}

// ErrNoCatalog reports that there is no catalog file.
var ErrNoCatalog = errors.New("jsonlstore: no catalog")

// Open returns the catalog on disk, from the cache when the
// file is the one read last; the caller releases it. Errors: ErrNoCatalog,
// catalog.ErrDamaged, catalog.ErrNewer, I/O.
func (c *Catalog) Open() (*Loaded, error) {
	f, st, err := c.openFile()
	if err != nil {
		if errors.Is(err, ErrNoCatalog) || errors.Is(err, catalog.ErrDamaged) {
			return nil, err
		}
		return nil, fmt.Errorf("jsonlstore: open catalog: %w", err)
	}
	c.mu.Lock()
	if lc := c.cached; lc != nil && lc.state == st {
		lc.refs.Add(1)
		c.mu.Unlock()
		_ = f.Close() // the cached descriptor reads the same file
		return lc, nil
	}
	c.mu.Unlock()
	cf, err := catalog.Decode(f, st.Size)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	lc := &Loaded{F: cf, file: f, state: st}
	lc.refs.Store(2) // the caller's and the cache's
	c.cache(lc)
	return lc, nil
}

// openFile opens the catalog file on disk, with the state of the
// file it opened; the caller closes it. Errors: ErrNoCatalog,
// catalog.ErrDamaged (not a regular file), I/O.
func (c *Catalog) openFile() (vfs.File, vfs.State, error) {
	f, err := c.root.FS.OpenFile(Path, layout.RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, vfs.State{}, ErrNoCatalog
	}
	if err != nil {
		return nil, vfs.State{}, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: not a regular file", catalog.ErrDamaged)
	}
	if err != nil {
		_ = f.Close() // read-only
		return nil, vfs.State{}, err
	}
	return f, vfs.StateOf(fi), nil
}

// cache makes lc (nil: none) the cached catalog and releases the cache's
// reference to the one it replaces.
func (c *Catalog) cache(lc *Loaded) {
	c.mu.Lock()
	old := c.cached
	c.cached = lc
	c.mu.Unlock()
	if old != nil {
		old.Release()
	}
}

// MarkSet is the marks directory as a listing or a catalog writer read it.
type MarkSet struct {
	// Exists is false when there is no marks directory; Dir describes it.
	Exists bool
	Dir    fs.FileInfo
	// Gens lists each marked session's generations.
	Gens  map[session.SessionID][]uint64
	Names []string // every mark's name, sorted
}

// Count is the number of marks.
func (m *MarkSet) Count() int { return len(m.Names) }

// ReadMarks lists the marks directory. A missing directory is no error
// (exists false).
func (c *Catalog) ReadMarks() (MarkSet, error) {
	fi, err := c.root.FS.Lstat(MarksDir)
	if errors.Is(err, fs.ErrNotExist) {
		return MarkSet{}, nil
	}
	if err != nil {
		return MarkSet{}, fmt.Errorf("jsonlstore: catalog marks: %w", err)
	}
	if !fi.IsDir() {
		return MarkSet{}, fmt.Errorf("jsonlstore: catalog marks: %s is not a directory", MarksDir)
	}
	entries, err := c.root.FS.ReadDir(MarksDir)
	if err != nil {
		return MarkSet{}, fmt.Errorf("jsonlstore: catalog marks: %w", err)
	}
	m := MarkSet{Exists: true, Dir: fi, Gens: make(map[session.SessionID][]uint64, len(entries))}
	for _, e := range entries {
		id, gen, ok := catalog.ParseMark(e.Name())
		if !ok {
			continue // not a mark (a name the store never makes)
		}
		m.Gens[id] = append(m.Gens[id], gen)
		m.Names = append(m.Names, e.Name())
	}
	slices.Sort(m.Names) // (ReadDir's order is the names' already, on every FS)
	return m, nil
}

// Trusts reports whether catalog f may rely on m: the marks directory it
// was written against, which its owner may still write to (holders must
// be able to make their marks in it, or nothing says their sessions
// changed), still holding every mark f's writer kept (only a catalog's
// writer removes a mark it knew of: one missing was removed by hand, or by
// a deletion that a power loss left half done).
func (m *MarkSet) Trusts(f *catalog.File) bool {
	if !m.Exists || m.Dir.Mode().Perm()&0o200 == 0 {
		return false
	}
	if id := vfs.IdentityOf(m.Dir); id.Dev != f.MarksDev || id.Ino != f.MarksIno {
		return false
	}
	for _, name := range f.Kept {
		if _, ok := slices.BinarySearch(m.Names, name); !ok {
			return false
		}
	}
	return true
}

// ReadRoot reads the root file; ok is false when it is missing,
// damaged or of another version.
func (c *Catalog) ReadRoot() (catalog.Root, bool) {
	b, err := vfs.ReadFile(c.root.FS, RootPath, catalog.RootSize)
	if err != nil {
		return catalog.Root{}, false
	}
	r, err := catalog.DecodeRoot(b)
	return r, err == nil
}

// RootTrusted reports whether root file r vouches, for catalog f, that
// the root directory in state now holds exactly the catalog's sessions:
// it names f, records the root as it is now, was settled when recorded,
// and the root's subdirectories are as many as f's sessions and the
// store's own directories (SubdirsAccounted).
func (c *Catalog) RootTrusted(r catalog.Root, ok bool, f *catalog.File, now catalog.DirState) bool {
	return ok && r.Catalog == f.ID && r.Dir == now && catalog.Settled(r.Dir, r.Observed) &&
		c.SubdirsAccounted(f.Len(), now)
}

// ownDirs are the directories the store keeps under its root beside the
// sessions'.
var ownDirs = []string{Dir, ".search", ".retired"}

// SubdirsAccounted reports whether the root directory, in state now,
// holds no more subdirectories than sessions sessions and the store's own
// directories that exist. A root file is written by whoever can write the
// catalog's directory, so one can be forged to name the current catalog
// and the root's current state; the root's link count, which the kernel
// keeps (two, plus one per subdirectory), is what a forger cannot set, and
// a session the catalog lacks shows in it. So the root file hides no
// session, and a root with anything else in it (a leftover of a creation
// or deletion, a directory set aside, junk) is not vouched for: listings
// read its names. Where the file system does not count subdirectories in
// the link count (a link count below 2: btrfs, ext4 past 65,000
// subdirectories, the simulation), the root file is believed alone.
func (c *Catalog) SubdirsAccounted(sessions int, now catalog.DirState) bool {
	if now.Nlink < 2 {
		return true
	}
	want := uint64(2 + sessions) //nolint:gosec // G115: a count
	for _, name := range ownDirs {
		if fi, err := c.root.FS.Lstat(name); err == nil && fi.IsDir() {
			want++
		}
	}
	return now.Nlink == want
}

// DirWritable reports whether the catalog's own directory is one
// its owner may write to (a holder that cannot make its mark removes the
// catalog, and needs that).
func (c *Catalog) DirWritable() bool {
	fi, err := c.root.FS.Lstat(Dir)
	return err == nil && fi.IsDir() && fi.Mode().Perm()&0o200 != 0
}
