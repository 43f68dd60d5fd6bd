package listing

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

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
// catalog cannot be used as it is; List then scans. Either way needs says
// what the catalog needs.
func (l *Lister) listCatalog(ctx context.Context, q summary.Query) (page summary.Page, served bool, needs catalogfile.Needs, err error) {
	v, ok := l.cat.Vouch(&needs)
	if !ok {
		return page, false, needs, nil
	}
	defer v.LC.Release()
	f, marks, look, gone := v.LC.F, v.Marks, v.Look, v.Gone
	comp, err := l.lookAt(ctx, f, look)
	if err != nil {
		return page, false, needs, err
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
			return page, true, needs, err
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
				needs.Up = catalogfile.UpkeepRebuild
				return page, false, needs, nil
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
		proved, err := l.proveEntries(f, sorted, comp, marks)
		if err != nil {
			return page, false, needs, err
		}
		if !proved.ok {
			needs.Up = max(needs.Up, proved.up)
			return page, false, needs, nil
		}
		if len(proved.gone) > 0 {
			for _, i := range proved.gone {
				skip[i] = true
			}
			needs.Up = max(needs.Up, catalogfile.UpkeepCompact)
			continue // deleted since the root was looked at: select again
		}
		entries, next := sel.Page(sorted)
		page = summary.Page{Items: make([]summary.Summary, len(entries)), Next: next}
		for k, i := range entries {
			if i >= n {
				page.Items[k] = comp[extra[i-n]].sum
				continue
			}
			sum, err := catalogfile.EntrySummary(f, i)
			if err != nil {
				needs.Up = catalogfile.UpkeepRebuild
				return summary.Page{}, false, needs, nil
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
	l.fillLeases(ctx, page.Items)
	return page, true, needs, nil
}

// lookAt reads the sessions of look (ID → entry index or -1): a session
// whose log is still as its entry says keeps its entry, the others get
// their summary now.
func (l *Lister) lookAt(ctx context.Context, f *catalog.File, look map[session.SessionID]int) ([]computed, error) {
	comp := make([]computed, 0, len(look))
	for id, i := range look {
		comp = append(comp, computed{id: id, entry: i})
	}
	err := layout.Parallel(ctx, len(comp), func(j int) error {
		c := &comp[j]
		if e, err := catalogfile.EntryAt(f, c.entry); err == nil && !e.Unreadable {
			fi, err := logfile.StatLog(l.root, c.id)
			if err == nil && catalogfile.LogStateOf(fi) == e.Log {
				c.keep = true
				return nil
			}
		}
		sum, err := l.current(ctx, c.id)
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
	up   catalogfile.Upkeep // when not ok
	gone []int              // entries whose session is gone
}

// proveEntries stats the log of every entry among sorted (the page and
// the one after it) that the listing did not look at already, and checks
// that it is as the entry says. An entry that fails means that its log
// changed after the listing read the marks: by a holder that has marked
// it since (a race with this listing: it scans instead), or without a
// mark, behind the catalog's back (then the catalog is rebuilt).
func (l *Lister) proveEntries(f *catalog.File, sorted []int, comp []computed, marks catalogfile.MarkSet) (proof, error) {
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
				return proof{up: catalogfile.UpkeepRebuild}, nil //nolint:nilerr // a damaged entry: the listing scans, and the catalog is rebuilt
			}
			if !e.ValidID() {
				return proof{up: catalogfile.UpkeepRebuild}, nil // damaged too
			}
			todo, ents = append(todo, i), append(ents, e)
		}
	}
	bad := make([]error, len(todo))
	err := layout.Parallel(context.Background(), len(todo), func(k int) error {
		e := &ents[k]
		fi, err := logfile.StatLog(l.root, e.ID)
		switch {
		case errors.Is(err, sessionstore.ErrNotFound):
			bad[k] = err
		case err != nil:
			bad[k] = err
		case catalogfile.LogStateOf(fi) != e.Log:
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
			now, merr := l.cat.ReadMarks()
			id := ents[k].ID
			if merr == nil && len(now.Gens[id]) > len(marks.Gens[id]) {
				return proof{up: catalogfile.UpkeepNone}, nil // marked since: a holder came during the listing
			}
			l.root.Logger.Warn("jsonlstore: catalog entry changed without a mark (a program without the catalog, or a hand edit); listing by scanning and rebuilding the catalog",
				"session", id)
			return proof{up: catalogfile.UpkeepRebuild}, nil
		default:
			return proof{up: catalogfile.UpkeepNone}, nil // unreadable now: the scan reports it
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
