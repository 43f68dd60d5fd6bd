package listing

import (
	"context"
	"sync/atomic"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/watch"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Lister serves the listings of one store root. It is safe for
// concurrent use.
type Lister struct {
	root *layout.Root
	cat  *catalogfile.Catalog
	host Host
	// Counts counts how listings were answered, for tests and diagnostics.
	Counts Counts
}

// Counts are a Lister's counters.
type Counts struct {
	// Indexed, Catalog and Scanned count the listings each route answered.
	Indexed, Catalog, Scanned atomic.Int64
	// LeaseProbes counts the lease statuses computed for pages.
	LeaseProbes atomic.Int64
}

// Host is what a listing needs of the store, and may not reach itself.
type Host interface {
	// Lease reports session id's lease status, computed now.
	Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error)
	// Watcher returns the store's watcher, nil while none runs.
	Watcher() *watch.Watcher
	// Closed reports whether the store was closed (sessions are not read
	// after).
	Closed() bool
}

// New returns the lister of root, which lists from cat when it can.
func New(root *layout.Root, cat *catalogfile.Catalog, host Host) *Lister {
	return &Lister{root: root, cat: cat, host: host}
}

// List returns a page of summaries (the store checks that it is open).
// When the watcher runs and confirms that its index is current, the page
// comes from the index; otherwise from the catalog when it can be
// trusted, else every session's summary is read from disk (scan.go), and
// the catalog is rewritten for the next listing. Either way its cost
// grows with the number of sessions and the page, not with the length of
// their histories, and lease status is computed for the page's items
// only, when read. Under a ReadOnly context the catalog is not rewritten.
func (l *Lister) List(ctx context.Context, q summary.Query) (summary.Page, error) {
	if err := ctx.Err(); err != nil {
		return summary.Page{}, err
	}
	if _, err := q.Normalize(); err != nil {
		return summary.Page{}, err
	}
	if page, ok, err := l.Indexed(ctx, q); ok {
		l.Counts.Indexed.Add(1)
		return page, err
	}
	page, served, needs, err := l.listCatalog(ctx, q)
	switch {
	case err == nil && served:
		l.Counts.Catalog.Add(1)
	case err == nil:
		l.Counts.Scanned.Add(1)
		page, err = l.Scan(ctx, q)
	}
	if err == nil && !readOnly(ctx) {
		l.cat.Keep(ctx, needs)
	}
	return page, err
}

// Indexed answers q from the watcher's index. ok is false when there
// is no watcher, it has not completed its initial scan, or it cannot
// confirm that its index is current.
func (l *Lister) Indexed(ctx context.Context, q summary.Query) (_ summary.Page, ok bool, _ error) {
	w := l.host.Watcher()
	if w == nil || !w.Current(ctx) {
		return summary.Page{}, false, nil
	}
	page, leases, err := w.PageWithLeases(q)
	if err != nil {
		return summary.Page{}, true, err
	}
	// A lease is computed when it is read, unless the watcher's status
	// cannot have changed: a free lease whose record is the one the
	// watcher looked at (every acquisition replaces it; only a holder's
	// death writes nothing, and a free lease has no holder to die). A
	// held, stale or unknown lease is inspected.
	var todo []int
	for i := range page.Items {
		if page.Items[i].Lease.State == summary.LeaseFree {
			if fi, err := vfs.Probe(l.root.FS, layout.SessionDir(page.Items[i].ID)+"/"+fslease.RecordFile); err == nil && leases[i].Unchanged(fi) {
				continue
			}
		}
		todo = append(todo, i)
	}
	l.fillLeasesOf(ctx, page.Items, todo)
	return page, true, nil
}

// fillLeases computes the lease status of a page's items, now. Errors
// leave the status unknown, as a session may be deleted meanwhile.
func (l *Lister) fillLeases(ctx context.Context, items []summary.Summary) {
	all := make([]int, len(items))
	for i := range all {
		all[i] = i
	}
	l.fillLeasesOf(ctx, items, all)
}

// fillLeasesOf is fillLeases for the items at the indexes todo.
func (l *Lister) fillLeasesOf(ctx context.Context, items []summary.Summary, todo []int) {
	_ = layout.Parallel(ctx, len(todo), func(j int) error {
		i := todo[j]
		l.Counts.LeaseProbes.Add(1)
		if st, err := l.host.Lease(ctx, items[i].ID); err == nil {
			items[i].Lease = st
		}
		return nil
	})
}
