package jsonlstore

import (
	"context"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/watch"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// CatalogDir is the catalog's directory under the store root: a cache of
// every session's summary, so that a fresh process lists the first page
// of ten thousand sessions from one file (TestNamesAreTheRooms ties the
// name to the room that owns it).
const CatalogDir = ".catalog"

// Reindex rebuilds the catalog from every session, waiting for another
// process's rewrite to finish first. Listings never need it — a catalog
// that is missing, damaged or behind is rebuilt or bypassed by the next
// listing — but it is the way back after something changed logs behind
// the catalog (a program built before it, a hand edit). Before it
// rebuilds, it sets aside (renames, never deletes) whatever stands where
// the catalog keeps its files but is not of the kind it keeps there. It
// modifies no session. Errors: ctx's, a closed store, I/O on the
// catalog's files.
func (s *Store) Reindex(ctx context.Context) (maintenance.CatalogReport, error) {
	return s.cat.Reindex(ctx)
}

// VerifyCatalog checks the catalog (ROOT/.catalog/) against the sessions:
// that its bytes pass their checksums and decode; that every entry a
// listing would believe (its session has no mark) describes its session's
// log as it is and carries the summary the log gives; and, when its root
// file vouches that the catalog holds exactly the root's sessions, that
// it does. It reads only, takes no lock and no lease, and is safe while
// agents write and listings rewrite the catalog: what changes under it is
// looked at again, never reported as a problem. It costs a read of every
// session's latest revision. Errors: ctx's, a closed store, I/O that keeps
// it from reading the root or the marks.
func (s *Store) VerifyCatalog(ctx context.Context) (maintenance.CatalogVerifyReport, error) {
	return s.cat.Verify(ctx)
}

// takeLease takes the lease of session id in directory dir (the session's,
// or the temporary directory of one being created) and marks the session
// for the lease's generation (catalogfile's marks). marked reports
// whether the mark is durable.
func (s *Store) takeLease(ctx context.Context, id session.SessionID, dir string, try bool, opts fslease.Options) (_ leaseHandle, marked bool, _ error) {
	lease, err := s.leases.Acquire(ctx, s.root.Abs(dir), try, opts)
	if err != nil {
		return nil, false, err
	}
	sync := catalogfile.DirsDurable
	if dir != layout.SessionDir(id) {
		sync = catalogfile.DirsCreator // a temporary directory, published by a rename that syncs the root
	}
	return lease, s.cat.Mark(id, lease.Generation(), sync), nil
}

// ensureMarkLocked makes sure, before w changes its log, that its catalog
// mark is still there (catalogfile.WriterMark.Ensure).
func (w *writer) ensureMarkLocked() { w.mark.Ensure() }

// storeHost is the store as its catalog and its listings see it
// (catalogfile.Host, listing.Host).
type storeHost struct{ s *Store }

func (h storeHost) Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error) {
	return h.s.Lease(ctx, id)
}

func (h storeHost) Closed() bool { return h.s.closed.Load() }

// TryLock takes the catalog's lock with the store's leaser (a simulated
// one in tests, so that the stores of one simulated machine exclude each
// other).
func (h storeHost) TryLock(name string) (func(), error) { return h.s.leases.TryLock(name) }

func (h storeHost) Watcher() *watch.Watcher {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.watch
}
