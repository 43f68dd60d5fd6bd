package jsonlstore

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync/atomic"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// The catalog: ROOT/.catalog/catalog holds every session's summary, so
// that a fresh process lists the first page of ten thousand sessions from
// one file instead of ten thousand summary.json files. It is a cache. The
// logs stay the only truth, nothing but the catalog is ever computed from
// it, and a listing that cannot trust it reads the sessions themselves
// (listScan), so a session on disk is listed whatever state the catalog is
// in. The bytes are package catalog's; this file says what the store
// trusts of them, and why that is sound.
//
// What a catalog C claims, and how each claim is kept true:
//
//   - An entry describes its session's log as it is on disk (identity,
//     size and modification time, the rule summary.json follows) unless
//     the session has a mark. A log changes only under its lease, and a
//     holder makes a mark, .catalog/marks/<id>.<generation>, durable
//     before it changes the log under that generation: at once after
//     taking the lease (before recovery may cut a torn tail), and it
//     checks that the mark is still there before every append
//     (catalogmarks.go). A mark goes only when a catalog that accounts
//     for the session after that generation ended is durable: its writer
//     saw the lease free (or stale) before it read the session
//     (catalogbuild.go). So a session without a mark has not changed
//     since its entry was made, and a listing believes the entries of
//     sessions it does not list without looking at them.
//   - Its entries are exactly the sessions under the root while the root
//     directory looks as the root file (.catalog/root) says it did when
//     someone compared the two, provided that look came SettleTime after
//     the directory's last change (catalog.Settled): every creation and
//     deletion renames an entry of the root, which gives it a new ctime.
//     Otherwise a listing reads the root's names, which costs a few
//     milliseconds for ten thousand sessions.
//   - The marks it relies on are in the directory it was written against
//     (its identity is in the header): a marks directory deleted and made
//     again, or one its owner may not write to, voids the catalog.
//
// Every entry a listing returns is also proved current by a stat of its
// log; one that fails the proof without a mark means that a log changed
// behind the protocol's back (by a program that predates the catalog, or
// by hand), and the listing distrusts the whole catalog: it scans, and the
// catalog is rebuilt. A search believes the catalog in the same way
// (search.go): the entries stand in for a stat of each log, and the logs
// of the sessions its hits come from are probed.
//
// Who writes what: holders write only their marks (never the catalog, so
// that an append is never held up by it); a listing or a search that
// finds the catalog missing, damaged, behind the root's sessions or short
// of many marks rewrites it, if it can take .catalog/lock at once (else it
// goes on without), and refreshes the root file; Reindex rebuilds it. None of
// it is a reader modifying session data: the catalog is no session's.

// File and directory names of the catalog, inside the store root.
const (
	// CatalogDir is the catalog's directory under the store root.
	CatalogDir      = ".catalog"
	catalogFile     = CatalogDir + "/catalog"
	catalogRootFile = CatalogDir + "/root"
	catalogLockFile = CatalogDir + "/lock"
	marksDir        = CatalogDir + "/marks"
	// The temporary files vfs.WriteFileAtomic writes them through: prefix,
	// layout.RandomSuffix, layout.TmpSuffix.
	catalogTemp = ".catalog-"
	rootTemp    = ".root-"
)

// compactMarks is how many marks beyond those the catalog's writer kept (of
// sessions it saw held) make a listing rewrite the catalog: each costs
// every listing a stat, the rewrite tens of milliseconds once.
const compactMarks = 32

// loadedCatalog is a catalog file read into memory (its header and
// entries), open for its summaries. It is shared by the listings of a
// Store while the file on disk stays the same, and closed when the last
// of them is done with it after it was replaced.
type loadedCatalog struct {
	f     *catalog.File
	file  vfs.File
	state vfs.State
	refs  atomic.Int32
}

func (c *loadedCatalog) release() {
	if c.refs.Add(-1) == 0 {
		_ = c.file.Close() // read-only
	}
}

// logStateOf is the catalog's record of the log fi describes.
func logStateOf(fi fs.FileInfo) catalog.LogState {
	id := vfs.IdentityOf(fi)
	return catalog.LogState{Dev: id.Dev, Ino: id.Ino, Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}

// dirStateOf is the catalog's record of the directory fi describes.
func dirStateOf(fi fs.FileInfo) catalog.DirState {
	id := vfs.IdentityOf(fi)
	return catalog.DirState{Dev: id.Dev, Ino: id.Ino, Nlink: vfs.Links(fi), Size: fi.Size(),
		Mtime: fi.ModTime().UnixNano(), Ctime: vfs.ChangeTimeOf(fi)}
}

// errNoCatalog reports that there is no catalog file.
var errNoCatalog = errors.New("jsonlstore: no catalog")

// openCatalog returns the catalog on disk, from the Store's cache when the
// file is the one read last; the caller releases it. Errors: errNoCatalog,
// catalog.ErrDamaged, catalog.ErrNewer, I/O.
func (s *Store) openCatalog() (*loadedCatalog, error) {
	f, st, err := s.openCatalogFile()
	if err != nil {
		if errors.Is(err, errNoCatalog) || errors.Is(err, catalog.ErrDamaged) {
			return nil, err
		}
		return nil, fmt.Errorf("jsonlstore: open catalog: %w", err)
	}
	s.mu.Lock()
	if c := s.cat; c != nil && c.state == st {
		c.refs.Add(1)
		s.mu.Unlock()
		_ = f.Close() // the cached descriptor reads the same file
		return c, nil
	}
	s.mu.Unlock()
	cf, err := catalog.Decode(f, st.Size)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	c := &loadedCatalog{f: cf, file: f, state: st}
	c.refs.Store(2) // the caller's and the cache's
	s.cacheCatalog(c)
	return c, nil
}

// openCatalogFile opens the catalog file on disk, with the state of the
// file it opened; the caller closes it. Errors: errNoCatalog,
// catalog.ErrDamaged (not a regular file), I/O.
func (s *Store) openCatalogFile() (vfs.File, vfs.State, error) {
	f, err := s.fs.OpenFile(catalogFile, layout.RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, vfs.State{}, errNoCatalog
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

// cacheCatalog makes c (nil: none) the Store's cached catalog and releases
// the cache's reference to the one it replaces.
func (s *Store) cacheCatalog(c *loadedCatalog) {
	s.mu.Lock()
	old := s.cat
	s.cat = c
	s.mu.Unlock()
	if old != nil {
		old.release()
	}
}

// markSet is the marks directory as a listing or a catalog writer read it.
type markSet struct {
	exists bool
	dir    fs.FileInfo
	// gens lists each marked session's generations.
	gens  map[session.SessionID][]uint64
	names []string // every mark's name
}

// count is the number of marks.
func (m *markSet) count() int { return len(m.names) }

// readMarks lists the marks directory. A missing directory is no error
// (exists false).
func (s *Store) readMarks() (markSet, error) {
	fi, err := s.fs.Lstat(marksDir)
	if errors.Is(err, fs.ErrNotExist) {
		return markSet{}, nil
	}
	if err != nil {
		return markSet{}, fmt.Errorf("jsonlstore: catalog marks: %w", err)
	}
	if !fi.IsDir() {
		return markSet{}, fmt.Errorf("jsonlstore: catalog marks: %s is not a directory", marksDir)
	}
	entries, err := s.fs.ReadDir(marksDir)
	if err != nil {
		return markSet{}, fmt.Errorf("jsonlstore: catalog marks: %w", err)
	}
	m := markSet{exists: true, dir: fi, gens: make(map[session.SessionID][]uint64, len(entries))}
	for _, e := range entries {
		id, gen, ok := catalog.ParseMark(e.Name())
		if !ok {
			continue // not a mark (a name the store never makes)
		}
		m.gens[id] = append(m.gens[id], gen)
		m.names = append(m.names, e.Name())
	}
	slices.Sort(m.names) // (ReadDir's order is the names' already, on every FS)
	return m, nil
}

// trusts reports whether catalog f may rely on m: the marks directory it
// was written against, which its owner may still write to (holders must
// be able to make their marks in it, or nothing says their sessions
// changed), still holding every mark f's writer kept (only a catalog's
// writer removes a mark it knew of: one missing was removed by hand, or by
// a deletion that a power loss left half done).
func (m *markSet) trusts(f *catalog.File) bool {
	if !m.exists || m.dir.Mode().Perm()&0o200 == 0 {
		return false
	}
	if id := vfs.IdentityOf(m.dir); id.Dev != f.MarksDev || id.Ino != f.MarksIno {
		return false
	}
	for _, name := range f.Kept {
		if _, ok := slices.BinarySearch(m.names, name); !ok {
			return false
		}
	}
	return true
}

// readCatalogRoot reads the root file; ok is false when it is missing,
// damaged or of another version.
func (s *Store) readCatalogRoot() (catalog.Root, bool) {
	b, err := vfs.ReadFile(s.fs, catalogRootFile, catalog.RootSize)
	if err != nil {
		return catalog.Root{}, false
	}
	r, err := catalog.DecodeRoot(b)
	return r, err == nil
}

// rootTrusted reports whether root file r vouches, for catalog id, that
// the root directory in state now holds exactly the catalog's sessions.
func rootTrusted(r catalog.Root, ok bool, id uint64, now catalog.DirState) bool {
	return ok && r.Catalog == id && r.Dir == now && catalog.Settled(r.Dir, r.Observed)
}

// catalogDirWritable reports whether the catalog's own directory is one
// its owner may write to (a holder that cannot make its mark removes the
// catalog, and needs that).
func (s *Store) catalogDirWritable() bool {
	fi, err := s.fs.Lstat(CatalogDir)
	return err == nil && fi.IsDir() && fi.Mode().Perm()&0o200 != 0
}
