package catalogfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Upkeep is what a listing found the catalog to need (doc.go, "who
// writes what").
type Upkeep int

// What a catalog may need, from least to most.
const (
	// UpkeepNone: nothing.
	UpkeepNone Upkeep = iota
	// UpkeepRoot: the catalog is right about the root's sessions, but no
	// root file says so: write one (a few bytes).
	UpkeepRoot
	// UpkeepCompact: sessions came or went, or marks piled up: write a
	// new catalog, keeping the entries of unmarked sessions.
	UpkeepCompact
	// UpkeepRebuild: there is no catalog this program can use (missing,
	// damaged, written against other marks, or caught out by a log that
	// changed without a mark): build one from every session.
	UpkeepRebuild
)

// Needs is what a reader of the catalog (a listing, a search) found it
// to need, for Keep once the reader is done.
type Needs struct {
	Up       Upkeep
	catalog  uint64
	root     catalog.DirState // the root as the reader first saw it
	observed int64            // when (the store's clock)
}

// Vouched is what a catalog that can be believed says of the sessions
// under the root: every entry that is neither in look nor gone describes
// its session's log as it is on disk (doc.go says why).
type Vouched struct {
	LC    *Loaded // the caller releases it
	Marks MarkSet
	// Look are the sessions that must be read (ID → entry, or -1 for one
	// the catalog does not know): the marked, the new (when the root is
	// not as the root file vouches) and those unreadable when their entry
	// was made.
	Look map[session.SessionID]int
	// Gone are the entries of sessions no longer under the root.
	Gone map[int]bool
}

// Vouch reads the root, the marks, the catalog and the root file, in
// that order: a change of the root or a mark made after these looks is
// one made during the reader's work, which may show it or not. ok is
// false when the catalog cannot be believed as it is; either way n says
// what it needs.
func (c *Catalog) Vouch(n *Needs) (v Vouched, ok bool) {
	rootFi, err := c.root.FS.Lstat(".")
	if err != nil {
		return v, false
	}
	n.root, n.observed = DirStateOf(rootFi), c.root.Now().UnixNano()
	marks, err := c.ReadMarks()
	if err != nil {
		return v, false
	}
	lc, err := c.Open()
	switch {
	case errors.Is(err, ErrNoCatalog), errors.Is(err, catalog.ErrDamaged):
		n.Up = UpkeepRebuild
		return v, false
	case err != nil:
		// A newer program's catalog is left to it; an I/O error, to the
		// next listing.
		return v, false
	}
	defer func() {
		if !ok {
			lc.Release()
		}
	}()
	f := lc.F
	n.catalog = f.ID
	if !marks.Trusts(f) || !c.DirWritable() {
		if marks.Exists && marks.Dir.Mode().Perm()&0o200 != 0 {
			n.Up = UpkeepRebuild // other marks than the catalog's: build one for these
		}
		return v, false
	}

	// Which sessions must be looked at: the marked, the new (when the
	// root is not as the root file vouches), the unreadable.
	r, rok := c.ReadRoot()
	look := map[session.SessionID]int{} // → entry, or -1
	gone := map[int]bool{}
	if !c.RootTrusted(r, rok, f, n.root) {
		names, err := vfs.ReadDirNames(c.root.FS, ".")
		if err != nil {
			return v, false
		}
		present := make(map[session.SessionID]bool, len(names))
		for _, n := range names {
			id := session.SessionID(n)
			if sessionstore.ValidateID(id) != nil {
				continue // leftovers, the catalog's own directory
			}
			present[id] = true
			if f.Find(id) < 0 {
				look[id] = -1
			}
		}
		for i := range f.Len() {
			if !present[f.EntryID(i)] {
				gone[i] = true
			}
		}
		switch {
		case len(look) > 0 || len(gone) > 0:
			n.Up = UpkeepCompact
		case catalog.Settled(n.root, n.observed) && c.SubdirsAccounted(f.Len(), n.root):
			// (A root with other subdirectories is never vouched for:
			// writing a root file for it would be redone by every listing.)
			n.Up = UpkeepRoot
		}
	}
	for id := range marks.Gens {
		// (A marked session the catalog does not know is new, and in look
		// already if it is there.)
		if i := f.Find(id); i >= 0 && !gone[i] {
			look[id] = i
		}
	}
	for i := range f.Len() {
		if f.Unreadable(i) && !gone[i] {
			id := f.EntryID(i)
			if sessionstore.ValidateID(id) != nil {
				n.Up = UpkeepRebuild // damaged: no path it names is read
				return v, false
			}
			look[id] = i
		}
	}
	if marks.Count() >= len(f.Kept)+compactMarks {
		n.Up = max(n.Up, UpkeepCompact)
	}
	v.LC, v.Marks, v.Look, v.Gone = lc, marks, look, gone
	return v, true
}

// EntryAt decodes entry i of f; i < 0 (no entry) is an error.
func EntryAt(f *catalog.File, i int) (catalog.Entry, error) {
	if i < 0 {
		return catalog.Entry{}, errNoEntry
	}
	return f.Entry(i)
}

var errNoEntry = errors.New("jsonlstore: no catalog entry")

// EntrySummary decodes entry i's summary, checked against the entry.
func EntrySummary(f *catalog.File, i int) (summary.Summary, error) {
	b, err := f.Summary(i)
	if err != nil {
		return summary.Summary{}, err
	}
	e, err := f.Entry(i)
	if err != nil {
		return summary.Summary{}, err
	}
	var sum summary.Summary
	if err := json.Unmarshal(b, &sum); err != nil || sum.ID != e.ID || sum.Revision != e.Revision {
		return summary.Summary{}, fmt.Errorf("%w: summary of %s does not match its entry", catalog.ErrDamaged, e.ID)
	}
	return sum, nil
}

// Keep does what a reader found the catalog to need: a rewrite
// (when no other process is rewriting it: a listing never waits for
// that), or a root file. Failure is logged, not returned: the listing is
// done, and the next one finds the same need.
func (c *Catalog) Keep(ctx context.Context, n Needs) {
	if ctx.Err() != nil || c.host.Closed() {
		return
	}
	switch n.Up {
	case UpkeepRoot:
		_ = c.WriteRoot(catalog.Root{Catalog: n.catalog, Dir: n.root, Observed: n.observed})
	case UpkeepCompact, UpkeepRebuild:
		if _, err := c.Write(ctx, n.Up == UpkeepRebuild, false); err != nil && !errors.Is(err, ErrLocked) && !logfile.EndsStoreWide(err) {
			c.root.Logger.Info("jsonlstore: catalog not rewritten; listings read the sessions meanwhile", "err", err)
		}
	}
}
