package catalogfile

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Writing the catalog (doc.go). One writer at a time, under
// .catalog/lock; a listing that cannot take it at once goes on without.
//
//  1. List the marks, then look at the root (its state, then its names):
//     a mark made after the first look belongs to a lease taken after it,
//     whose changes the next writer accounts for.
//  2. For each marked session that exists, inspect its lease: free or
//     stale means that every generation whose mark was listed has ended.
//     Only then read the session, so its entry holds whatever those
//     generations wrote.
//  3. Take the previous catalog's entry of every unmarked session it
//     knows (unless rebuilding from scratch), read the others.
//  4. Write the new catalog beside the old one and rename it into place.
//     When step 6 lets go a mark that the catalog replaced relies on
//     without naming it (a mark made after that catalog was written, which
//     its writer could not keep), sync the directory first: a power loss
//     that undid the rename would bring that catalog back, believing a
//     session whose mark is gone. Otherwise a catalog that comes back is
//     harmless: every mark it relies on is still there (such marks go only
//     after such a sync), or one it kept is missing and voids it, or it
//     was written against another marks directory. The new file's data is
//     never synced: a power loss that tears it leaves a file whose
//     checksums fail, which counts as no catalog.
//  5. Write the root file when the look at the root was settled, every
//     name in it got an entry and its other subdirectories are the store's
//     own (SubdirsAccounted; not synced: a lost root file costs a
//     listing a read of the root's names).
//  6. Remove the marks of sessions whose lease was seen free in step 2,
//     and of sessions that no longer exist (no directory, and none being
//     made). Not synced: a mark that comes back costs a stat.

// Lock takes the catalog's lock: at once, or (wait) retrying until
// ctx is done. It makes the catalog's directories and lock file as needed.
func (c *Catalog) Lock(ctx context.Context, wait bool) (func(), error) {
	if err := c.ensureCatalogDirs(DirsLazy); err != nil {
		return nil, err
	}
	f, err := c.root.FS.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, layout.FilePerm)
	if err != nil {
		return nil, err
	}
	_ = f.Close() // it exists: the lock is taken on it by name
	for {
		unlock, err := c.host.TryLock(c.root.Abs(lockPath))
		if !errors.Is(err, ErrLocked) || !wait {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Write writes a new catalog: from every session (full), or
// keeping the previous catalog's entries of unmarked sessions. Without
// wait it gives up at once (ErrLocked) when another process writes it.
func (c *Catalog) Write(ctx context.Context, full, wait bool) (maintenance.CatalogReport, error) {
	unlock, err := c.Lock(ctx, wait)
	if err != nil {
		return maintenance.CatalogReport{}, fmt.Errorf("jsonlstore: catalog: %w", err)
	}
	defer unlock()
	l, err := c.LookFor(ctx, full)
	if err != nil {
		return maintenance.CatalogReport{}, err
	}
	defer l.Release()
	return c.WriteLooked(ctx, l)
}

// Look is what a catalog's writer saw before it read any session
// (steps 1 and 2): the marks, the root, the previous catalog, the leases
// of the marked sessions.
type Look struct {
	start    time.Time
	marks    MarkSet
	root     catalog.DirState
	observed int64
	names    []session.SessionID
	present  map[session.SessionID]bool
	creating map[session.SessionID]bool
	held     map[session.SessionID]bool
	// prev is the catalog replaced, when the marks vouch for it; reuse is
	// prev unless every session is to be read again.
	prev, reuse *catalog.File
	prevRef     *Loaded
}

// Release gives back the previous catalog the look holds.
func (l *Look) Release() {
	if l.prevRef != nil {
		l.prevRef.Release()
	}
}

// LookFor makes steps 1 and 2, under the catalog's lock.
func (c *Catalog) LookFor(ctx context.Context, full bool) (*Look, error) {
	l := &Look{start: time.Now(), held: map[session.SessionID]bool{}}
	// Step 1.
	var err error
	if l.marks, err = c.ReadMarks(); err != nil {
		return nil, err
	}
	if !l.marks.Exists {
		return nil, fmt.Errorf("jsonlstore: catalog: %s is missing", MarksDir)
	}
	rootFi, err := c.root.FS.Lstat(".")
	if err != nil {
		return nil, fmt.Errorf("jsonlstore: catalog: %w", err)
	}
	l.root, l.observed = DirStateOf(rootFi), c.root.Now().UnixNano()
	if l.names, l.creating, err = c.rootNames(); err != nil {
		return nil, err
	}
	if lc, err := c.Open(); err == nil {
		if l.marks.Trusts(lc.F) {
			l.prev, l.prevRef = lc.F, lc
		} else {
			lc.Release()
		}
	}
	if !full {
		l.reuse = l.prev
	}

	// Step 2.
	l.present = make(map[session.SessionID]bool, len(l.names))
	for _, id := range l.names {
		l.present[id] = true
	}
	var probe []session.SessionID
	for id := range l.marks.Gens {
		if l.present[id] {
			probe = append(probe, id)
		}
	}
	probed := make([]bool, len(probe))
	if err := layout.Parallel(ctx, len(probe), func(k int) error {
		st, err := c.host.Lease(ctx, probe[k])
		if logfile.EndsStoreWide(err) {
			return err
		}
		// A lease that cannot be inspected counts as held: its marks stay.
		probed[k] = err != nil || st.State == summary.LeaseHeld
		return nil //nolint:nilerr // that error is the answer: held
	}); err != nil {
		l.Release()
		return nil, err
	}
	for k, id := range probe {
		if probed[k] {
			l.held[id] = true
		}
	}
	return l, nil
}

// WriteLooked makes steps 3 to 6 of a rewrite whose look is l.
func (c *Catalog) WriteLooked(ctx context.Context, l *Look) (maintenance.CatalogReport, error) {
	var rep maintenance.CatalogReport
	marks, names, old := l.marks, l.names, l.reuse
	// Step 3.
	entries := make([]catalog.Entry, len(names))
	found, read := make([]bool, len(names)), make([]bool, len(names))
	err := layout.Parallel(ctx, len(names), func(k int) error {
		id := names[k]
		if old != nil && len(marks.Gens[id]) == 0 {
			i := old.Find(id)
			if e, err := EntryAt(old, i); err == nil && !e.Unreadable {
				b, err := old.Summary(i)
				if err == nil {
					e.Summary = b
					entries[k], found[k] = e, true
					return nil
				}
			}
		}
		e, ok, err := c.catalogEntry(ctx, id)
		if err != nil {
			return err
		}
		entries[k], found[k], read[k] = e, ok, true
		return nil
	})
	if err != nil {
		return rep, err
	}
	f := &catalog.File{ID: newCatalogID(), Written: c.root.Now().UnixNano()}
	mid := vfs.IdentityOf(marks.Dir)
	f.MarksDev, f.MarksIno = mid.Dev, mid.Ino
	every := true
	for k := range entries {
		if !found[k] {
			every = false // gone since the root was read
			continue
		}
		f.Entries = append(f.Entries, entries[k])
		if read[k] {
			rep.Read++
		}
		if entries[k].Unreadable {
			rep.Unreadable++
		}
	}
	rep.Sessions = len(f.Entries)

	// Which marks go (step 6), counted before the catalog is written so
	// that it names those that stay.
	var drop []string
	for id, gens := range marks.Gens {
		keep := l.held[id] || l.creating[id]
		if !keep && !l.present[id] {
			// Not a session any more, unless it appeared after the look.
			if _, err := c.root.FS.Lstat(layout.SessionDir(id)); !errors.Is(err, fs.ErrNotExist) {
				keep = true
			}
		}
		for _, g := range gens {
			if keep {
				f.Kept = append(f.Kept, catalog.MarkName(id, g))
			} else {
				drop = append(drop, catalog.MarkName(id, g))
			}
		}
	}
	rep.MarksKept = len(f.Kept)

	// Step 4.
	b, err := catalog.Encode(f)
	if err != nil {
		return rep, err
	}
	if err := vfs.WriteFileAtomic(c.root.FS, Dir, "catalog", b, layout.FilePerm, false, "-"+layout.RandomSuffix()); err != nil {
		return rep, fmt.Errorf("jsonlstore: write catalog: %w", err)
	}
	if l.prev != nil && dropsUnkept(drop, l.prev.Kept) {
		if err := c.root.FS.SyncDir(Dir); err != nil {
			return rep, fmt.Errorf("jsonlstore: write catalog: %w", err)
		}
	}

	// Step 5.
	if every && catalog.Settled(l.root, l.observed) && c.SubdirsAccounted(len(f.Entries), l.root) {
		rep.RootFile = c.WriteRoot(catalog.Root{Catalog: f.ID, Dir: l.root, Observed: l.observed}) == nil
	}

	// Step 6.
	for _, name := range drop {
		if err := c.root.FS.Remove(MarksDir + "/" + name); err == nil || errors.Is(err, fs.ErrNotExist) {
			rep.MarksRemoved++
		}
	}
	rep.MarksKept += len(drop) - rep.MarksRemoved
	c.sweepCatalogTemps()
	rep.Duration = time.Since(l.start)
	return rep, nil
}

// dropsUnkept reports whether drop names a mark that kept does not (both
// sorted or not: kept is).
func dropsUnkept(drop, kept []string) bool {
	for _, name := range drop {
		if _, ok := slices.BinarySearch(kept, name); !ok {
			return true
		}
	}
	return false
}

// rootNames lists the sessions under the root (directories named by a
// valid ID), and the IDs of sessions being created (temporary directories).
func (c *Catalog) rootNames() ([]session.SessionID, map[session.SessionID]bool, error) {
	entries, err := c.root.FS.ReadDir(".")
	if err != nil {
		return nil, nil, fmt.Errorf("jsonlstore: list root: %w", err)
	}
	var ids []session.SessionID
	creating := map[session.SessionID]bool{}
	for _, e := range entries {
		name := e.Name()
		if rest, ok := strings.CutPrefix(name, layout.TmpDirPrefix); ok && layout.IsLeftover(name) {
			creating[session.SessionID(rest[:strings.LastIndexByte(rest, '-')])] = true
			continue
		}
		id := session.SessionID(name)
		if e.IsDir() && sessionstore.ValidateID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, creating, nil
}

// catalogEntry reads session id's entry from its files. ok is false when
// there is no such session (any more); a session that cannot be read gets
// an entry that says why.
func (c *Catalog) catalogEntry(ctx context.Context, id session.SessionID) (catalog.Entry, bool, error) {
	sum, st, err := c.current(ctx, id)
	switch {
	case err == nil:
	case logfile.EndsStoreWide(err):
		return catalog.Entry{}, false, err
	case errors.Is(err, sessionstore.ErrNotFound):
		return catalog.Entry{}, false, nil
	default:
		return catalog.Entry{ID: id, Unreadable: true, Summary: []byte(err.Error())}, true, nil
	}
	return entryOf(sum, st)
}

// entryOf is the catalog entry of summary sum, computed from the log in
// state st.
func entryOf(sum summary.Summary, st catalog.LogState) (catalog.Entry, bool, error) {
	sum.Lease = summary.LeaseStatus{} // computed when read, never cached
	b, err := json.Marshal(sum)
	if err != nil {
		return catalog.Entry{}, false, err
	}
	e := catalog.Entry{
		ID: sum.ID, Log: st, Revision: sum.Revision, Created: sum.CreatedAt, Updated: sum.UpdatedAt,
		State: sum.State, Kind: sum.Kind, ParentID: sum.ParentID, Project: sum.Project, Summary: b,
	}
	if err := e.SetLabels(sum.Labels); err != nil {
		return catalog.Entry{}, false, err
	}
	return e, true, nil
}

// WriteRoot replaces the root file, atomically but not durably.
func (c *Catalog) WriteRoot(r catalog.Root) error {
	return vfs.WriteFileAtomic(c.root.FS, Dir, "root", catalog.EncodeRoot(r), layout.FilePerm, false, "-"+layout.RandomSuffix())
}

// sweepCatalogTemps removes what writers of the catalog that died left in
// its directory: temporary catalogs (only the lock's holder writes them,
// and it holds the lock now) and temporary root files older than
// LeftoverAge (listings write those without the lock).
func (c *Catalog) sweepCatalogTemps() {
	entries, err := c.root.FS.ReadDir(Dir)
	if err != nil {
		return
	}
	now := c.root.Now()
	for _, e := range entries {
		name := e.Name()
		suffix, ok := strings.CutSuffix(name, layout.TmpSuffix)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(suffix, catalogTemp) && layout.IsSuffix(strings.TrimPrefix(suffix, catalogTemp)):
		case strings.HasPrefix(suffix, rootTemp) && layout.IsSuffix(strings.TrimPrefix(suffix, rootTemp)):
			fi, err := e.Info()
			if err != nil || now.Sub(fi.ModTime()) < c.root.LeftoverAge {
				continue
			}
		default:
			continue
		}
		_ = c.root.FS.Remove(Dir + "/" + name)
	}
}

// newCatalogID returns a random, non-zero catalog ID.
func newCatalogID() uint64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// Reindex rebuilds the catalog from every session, waiting for another
// process's rewrite to finish first. Listings never need it — a catalog
// that is missing, damaged or behind is rebuilt or bypassed by the next
// listing — but it is the way back after something changed logs behind
// the catalog (a program built before it, a hand edit). It modifies no
// session. Errors: ctx's, a closed store, I/O on the catalog's files.
func (c *Catalog) Reindex(ctx context.Context) (maintenance.CatalogReport, error) {
	if c.host.Closed() {
		return maintenance.CatalogReport{}, sessionstore.ErrClosed
	}
	aside, err := c.setAsideCatalogDamage()
	if err != nil {
		return maintenance.CatalogReport{SetAside: aside}, fmt.Errorf("jsonlstore: catalog: %w", err)
	}
	rep, err := c.Write(ctx, true, true)
	rep.SetAside = aside
	return rep, err
}

// catalogKinds are the entries the catalog keeps in its directory, and
// whether each is a directory (else a regular file).
var catalogKinds = []struct {
	name string
	dir  bool
}{{"lock", false}, {"marks", true}, {"catalog", false}, {"root", false}}

// catalogAside is the prefix of the name an entry set aside is given.
const catalogAside = "aside-"

// wrongKind says what fi, which stands where the catalog keeps a directory
// (dir) or a regular file, is instead, or "" when it is what belongs there.
// A symlink is never what belongs: the store follows none.
func wrongKind(fi fs.FileInfo, dir bool) string {
	switch m := fi.Mode(); {
	case dir && m.IsDir(), !dir && m.IsRegular():
		return ""
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file or directory"
}

// setAsideCatalogDamage moves out of the way what stands where the catalog
// keeps its directory (.catalog), lock, marks directory, file or root file
// but is not of the kind the store keeps there — a FIFO, a symlink, a file
// for a directory, a directory for a file — which no listing can use or
// replace, and on which a rebuild would fail. Nothing is deleted and no
// link is followed: each is renamed within its directory, .catalog to
// .catalog-aside-<random>, the others to .catalog/aside-<name>-<random>.
// It returns the new names. Anything else in .catalog is left alone (the
// catalog reads only its own names).
func (c *Catalog) setAsideCatalogDamage() ([]string, error) {
	var aside []string
	move := func(name, to string) error {
		if err := c.root.FS.Rename(name, to); err != nil {
			return fmt.Errorf("set aside %s: %w", name, err)
		}
		aside = append(aside, to)
		return nil
	}
	fi, err := c.root.FS.Lstat(Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case wrongKind(fi, true) != "":
		return aside, move(Dir, Dir+"-"+catalogAside+layout.RandomSuffix())
	}
	for _, k := range catalogKinds {
		name := Dir + "/" + k.name
		fi, err := c.root.FS.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return aside, err
		case wrongKind(fi, k.dir) != "":
			if err := move(name, Dir+"/"+catalogAside+k.name+"-"+layout.RandomSuffix()); err != nil {
				return aside, err
			}
		}
	}
	return aside, nil
}
