package jsonlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// upkeep is what a listing found the catalog to need (catalog.go, "who
// writes what").
type upkeep int

const (
	upkeepNone upkeep = iota
	// upkeepRoot: the catalog is right about the root's sessions, but no
	// root file says so: write one (a few bytes).
	upkeepRoot
	// upkeepCompact: sessions came or went, or marks piled up: write a
	// new catalog, keeping the entries of unmarked sessions.
	upkeepCompact
	// upkeepRebuild: there is no catalog this program can use (missing,
	// damaged, written against other marks, or caught out by a log that
	// changed without a mark): build one from every session.
	upkeepRebuild
)

// catalogList is what listCatalog found, for List's upkeep after it.
type catalogList struct {
	up       upkeep
	catalog  uint64
	root     catalog.DirState // the root as the listing first saw it
	observed int64            // when (the store's clock)
}

// computed is a session whose entry a listing could not take as it is: it
// has a mark, is new, or could not be read when the entry was made.
type computed struct {
	id    session.SessionID
	entry int // its entry in the catalog, or -1
	sum   summary.Summary
	bad   error // why it cannot be read; nil otherwise
	gone  bool  // no such session (any more)
	keep  bool  // the entry is current after all (its log is as it says)
}

// listCatalog answers q from the catalog. served is false when the
// catalog cannot be used as it is; List then scans. Either way cl says
// what the catalog needs.
func (s *Store) listCatalog(ctx context.Context, q summary.Query) (page summary.Page, served bool, cl catalogList, err error) {
	v, ok := s.vouch(&cl)
	if !ok {
		return page, false, cl, nil
	}
	defer v.lc.release()
	f, marks, look, gone := v.lc.f, v.marks, v.look, v.gone
	comp, err := s.lookAt(ctx, f, look)
	if err != nil {
		return page, false, cl, err
	}

	// The page: the entries, with what the listing computed in their
	// place. Indices below f.Len() are entries; above, comp's.
	n := f.Len()
	skip := make(map[int]bool, len(gone)+len(comp))
	for i := range gone {
		skip[i] = true
	}
	var extra []int // indices into comp of the sessions computed anew
	for j := range comp {
		c := &comp[j]
		if c.entry >= 0 && !c.keep {
			skip[c.entry] = true
		}
		if !c.keep && !c.gone && c.bad == nil {
			extra = append(extra, j)
		}
	}
	id := func(i int) session.SessionID {
		if i < n {
			return f.EntryID(i)
		}
		return comp[extra[i-n]].id
	}
	for {
		sel, err := summary.NewSelectionOf(q, id)
		if err != nil {
			return page, true, cl, err
		}
		nq := sel.Query()
		sel.Reset(n + len(extra))
		filters := nq.Filters()
		for i := range n {
			if skip[i] {
				continue
			}
			if !filters {
				// Only the ID and the times: the rest of the entry is
				// decoded for the entries the page shows.
				created, updated := f.Times(i)
				sel.OfferKey(i, keyOf(nq.Order, f.EntryID(i), created, updated))
				continue
			}
			e, err := f.Entry(i)
			if err != nil {
				cl.up = upkeepRebuild
				return page, false, cl, nil
			}
			if matchEntry(&nq, &e) {
				sel.OfferKey(i, keyOf(nq.Order, e.ID, e.Created, e.Updated))
			}
		}
		for k, j := range extra {
			sum := &comp[j].sum
			if nq.Match(sum) {
				sel.OfferKey(n+k, summary.KeyOf(nq.Order, sum))
			}
		}
		sorted := sel.Sorted()
		// Every entry the page shows proves itself current by a stat of
		// its log (those computed just now were looked at already).
		proved, err := s.proveEntries(f, sorted, comp, marks)
		if err != nil {
			return page, false, cl, err
		}
		if !proved.ok {
			cl.up = max(cl.up, proved.up)
			return page, false, cl, nil
		}
		if len(proved.gone) > 0 {
			for _, i := range proved.gone {
				skip[i] = true
			}
			cl.up = max(cl.up, upkeepCompact)
			continue // deleted since the root was looked at: select again
		}
		entries, next := sel.Page(sorted)
		page = summary.Page{Items: make([]summary.Summary, len(entries)), Next: next}
		for k, i := range entries {
			if i >= n {
				page.Items[k] = comp[extra[i-n]].sum
				continue
			}
			sum, err := entrySummary(f, i)
			if err != nil {
				cl.up = upkeepRebuild
				return summary.Page{}, false, cl, nil
			}
			page.Items[k] = sum
		}
		break
	}
	for j := range comp {
		if c := &comp[j]; c.bad != nil {
			page.Unreadable = append(page.Unreadable, summary.UnreadableOf(c.id, c.bad))
		}
	}
	slices.SortFunc(page.Unreadable, func(a, b summary.Unreadable) int { return strings.Compare(string(a.ID), string(b.ID)) })
	s.fillLeases(ctx, page.Items)
	return page, true, cl, nil
}

// vouched is what a catalog that can be believed says of the sessions
// under the root: every entry that is neither in look nor gone describes
// its session's log as it is on disk (catalog.go says why).
type vouched struct {
	lc    *loadedCatalog // the caller releases it
	marks markSet
	// look are the sessions that must be read (ID → entry, or -1 for one
	// the catalog does not know): the marked, the new (when the root is
	// not as the root file vouches) and those unreadable when their entry
	// was made.
	look map[session.SessionID]int
	// gone are the entries of sessions no longer under the root.
	gone map[int]bool
}

// vouch reads the root, the marks, the catalog and the root file, in
// that order: a change of the root or a mark made after these looks is
// one made during the reader's work, which may show it or not. ok is
// false when the catalog cannot be believed as it is; either way cl says
// what it needs.
func (s *Store) vouch(cl *catalogList) (v vouched, ok bool) {
	rootFi, err := s.fs.Lstat(".")
	if err != nil {
		return v, false
	}
	cl.root, cl.observed = dirStateOf(rootFi), s.opts.Now().UnixNano()
	marks, err := s.readMarks()
	if err != nil {
		return v, false
	}
	lc, err := s.openCatalog()
	switch {
	case errors.Is(err, errNoCatalog), errors.Is(err, catalog.ErrDamaged):
		cl.up = upkeepRebuild
		return v, false
	case err != nil:
		// A newer program's catalog is left to it; an I/O error, to the
		// next listing.
		return v, false
	}
	defer func() {
		if !ok {
			lc.release()
		}
	}()
	f := lc.f
	cl.catalog = f.ID
	if !marks.trusts(f) || !s.catalogDirWritable() {
		if marks.exists && marks.dir.Mode().Perm()&0o200 != 0 {
			cl.up = upkeepRebuild // other marks than the catalog's: build one for these
		}
		return v, false
	}

	// Which sessions must be looked at: the marked, the new (when the
	// root is not as the root file vouches), the unreadable.
	r, rok := s.readCatalogRoot()
	look := map[session.SessionID]int{} // → entry, or -1
	gone := map[int]bool{}
	if !rootTrusted(r, rok, f.ID, cl.root) {
		names, err := vfs.ReadDirNames(s.fs, ".")
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
			cl.up = upkeepCompact
		case catalog.Settled(cl.root, cl.observed):
			cl.up = upkeepRoot
		}
	}
	for id := range marks.gens {
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
				cl.up = upkeepRebuild // damaged: no path it names is read
				return v, false
			}
			look[id] = i
		}
	}
	if marks.count() >= len(f.Kept)+compactMarks {
		cl.up = max(cl.up, upkeepCompact)
	}
	v.lc, v.marks, v.look, v.gone = lc, marks, look, gone
	return v, true
}

// lookAt reads the sessions of look (ID → entry index or -1): a session
// whose log is still as its entry says keeps its entry, the others get
// their summary now.
func (s *Store) lookAt(ctx context.Context, f *catalog.File, look map[session.SessionID]int) ([]computed, error) {
	comp := make([]computed, 0, len(look))
	for id, i := range look {
		comp = append(comp, computed{id: id, entry: i})
	}
	err := layout.Parallel(ctx, len(comp), func(j int) error {
		c := &comp[j]
		if e, err := entryAt(f, c.entry); err == nil && !e.Unreadable {
			fi, err := logfile.StatLog(s.root, c.id)
			if err == nil && logStateOf(fi) == e.Log {
				c.keep = true
				return nil
			}
		}
		sum, _, err := s.summaryState(ctx, c.id)
		switch {
		case err == nil:
			c.sum = sum
		case logfile.EndsStoreWide(err):
			return err
		case errors.Is(err, sessionstore.ErrNotFound):
			c.gone = true
		default:
			c.bad = err
		}
		return nil
	})
	return comp, err
}

// proof is what proveEntries found.
type proof struct {
	ok   bool
	up   upkeep // when not ok
	gone []int  // entries whose session is gone
}

// proveEntries stats the log of every entry among sorted (the page and
// the one after it) that the listing did not look at already, and checks
// that it is as the entry says. An entry that fails means that its log
// changed after the listing read the marks: by a holder that has marked
// it since (a race with this listing: it scans instead), or without a
// mark, behind the catalog's back (then the catalog is rebuilt).
func (s *Store) proveEntries(f *catalog.File, sorted []int, comp []computed, marks markSet) (proof, error) {
	looked := make(map[int]bool, len(comp))
	for j := range comp {
		if comp[j].entry >= 0 {
			looked[comp[j].entry] = true
		}
	}
	var todo []int
	var ents []catalog.Entry
	for _, i := range sorted {
		if i < f.Len() && !looked[i] {
			e, err := f.Entry(i)
			if err != nil {
				return proof{up: upkeepRebuild}, nil //nolint:nilerr // a damaged entry: the listing scans, and the catalog is rebuilt
			}
			if !e.ValidID() {
				return proof{up: upkeepRebuild}, nil // damaged too
			}
			todo, ents = append(todo, i), append(ents, e)
		}
	}
	bad := make([]error, len(todo))
	err := layout.Parallel(context.Background(), len(todo), func(k int) error {
		e := &ents[k]
		fi, err := logfile.StatLog(s.root, e.ID)
		switch {
		case errors.Is(err, sessionstore.ErrNotFound):
			bad[k] = err
		case err != nil:
			bad[k] = err
		case logStateOf(fi) != e.Log:
			bad[k] = errStaleEntry
		}
		return nil
	})
	if err != nil {
		return proof{}, err
	}
	p := proof{ok: true}
	for k, err := range bad {
		switch {
		case err == nil:
		case errors.Is(err, sessionstore.ErrNotFound):
			p.gone = append(p.gone, todo[k])
		case errors.Is(err, errStaleEntry):
			now, merr := s.readMarks()
			id := ents[k].ID
			if merr == nil && len(now.gens[id]) > len(marks.gens[id]) {
				return proof{up: upkeepNone}, nil // marked since: a holder came during the listing
			}
			s.opts.Logger.Warn("jsonlstore: catalog entry changed without a mark (a program without the catalog, or a hand edit); listing by scanning and rebuilding the catalog",
				"session", id)
			return proof{up: upkeepRebuild}, nil
		default:
			return proof{up: upkeepNone}, nil // unreadable now: the scan reports it
		}
	}
	return p, nil
}

var errStaleEntry = errors.New("jsonlstore: catalog entry does not match its log")

// matchEntry reports whether entry e passes q's filter (q normalized).
func matchEntry(q *summary.Query, e *catalog.Entry) bool {
	if !q.Filters() {
		return true
	}
	s := summary.Summary{
		ID: e.ID, State: e.State, Kind: e.Kind, ParentID: e.ParentID,
		CreatedAt: e.Created, UpdatedAt: e.Updated, Revision: e.Revision, Project: e.Project,
	}
	if len(q.Labels) > 0 {
		s.Labels = e.Labels() // decoded only for the filter that reads them
	}
	return q.Match(&s)
}

// keyOf is an entry's key in order o (summary.KeyOf of its summary).
func keyOf(o summary.Order, id session.SessionID, created, updated time.Time) summary.Key {
	s := summary.Summary{ID: id, CreatedAt: created, UpdatedAt: updated}
	return summary.KeyOf(o, &s)
}

// entryAt decodes entry i of f; i < 0 (no entry) is an error.
func entryAt(f *catalog.File, i int) (catalog.Entry, error) {
	if i < 0 {
		return catalog.Entry{}, errNoEntry
	}
	return f.Entry(i)
}

var errNoEntry = errors.New("jsonlstore: no catalog entry")

// entrySummary decodes entry i's summary, checked against the entry.
func entrySummary(f *catalog.File, i int) (summary.Summary, error) {
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

// keepCatalog does what a listing found the catalog to need: a rewrite
// (when no other process is rewriting it: a listing never waits for
// that), or a root file. Failure is logged, not returned: the listing is
// done, and the next one finds the same need.
func (s *Store) keepCatalog(ctx context.Context, cl catalogList) {
	if ctx.Err() != nil || s.closed.Load() {
		return
	}
	switch cl.up {
	case upkeepRoot:
		_ = s.writeCatalogRoot(catalog.Root{Catalog: cl.catalog, Dir: cl.root, Observed: cl.observed})
	case upkeepCompact, upkeepRebuild:
		if _, err := s.writeCatalog(ctx, cl.up == upkeepRebuild, false); err != nil && !errors.Is(err, errLocked) && !logfile.EndsStoreWide(err) {
			s.opts.Logger.Info("jsonlstore: catalog not rewritten; listings read the sessions meanwhile", "err", err)
		}
	}
}
