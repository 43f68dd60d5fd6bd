package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/lease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/listing"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// List returns a page of summaries. When the watcher runs (see Watch) and
// confirms that its index is current, the page comes from the index;
// otherwise from the catalog when it can be trusted, else every session's
// summary is read from disk, and the catalog is rewritten for the next
// listing (package listing chooses). Either way its cost grows with the
// number of sessions and the page, not with the length of their
// histories, and lease status is computed for the page's items only, when
// read.
func (s *Store) List(ctx context.Context, q summary.Query) (summary.Page, error) {
	if s.closed.Load() {
		return summary.Page{}, sessionstore.ErrClosed
	}
	return s.lister.List(ctx, q)
}

// ReadOnly returns ctx for a dry run: List under it leaves the catalog
// (.catalog/) as it is, and every other file of the store.
func ReadOnly(ctx context.Context) context.Context { return listing.ReadOnly(ctx) }

// Lease reports the lease status of session id, computed now from the lock
// (a probe that takes and drops a shared lock) and lease.json.
func (s *Store) Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error) {
	if err := s.checkSession(ctx, id); err != nil {
		return summary.LeaseStatus{}, err
	}
	st, err := s.leases.Inspect(ctx, s.root.Abs(layout.SessionDir(id)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return summary.LeaseStatus{}, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
		}
		return summary.LeaseStatus{}, layout.OpErr("lease", id, err)
	}
	return lease.Status(st, s.opts.Now()), nil
}

// sessionIDs lists the session directories under the root, skipping
// leftovers and anything that is not a valid session ID.
func (s *Store) sessionIDs() ([]session.SessionID, error) { return layout.SessionIDs(s.fs) }

// forSessions runs fn for each of ids, or every session when ids is
// empty, on the open store (logfile.ForSessions).
func (s *Store) forSessions(ids []session.SessionID, fn func(id session.SessionID) error, bad *[]summary.Unreadable) (all bool, err error) {
	if s.closed.Load() {
		return false, sessionstore.ErrClosed
	}
	return logfile.ForSessions(s.fs, ids, fn, bad)
}

// summaryOf returns session id's summary without its lease status
// (logfile.Current).
func (s *Store) summaryOf(ctx context.Context, id session.SessionID) (summary.Summary, error) {
	if s.closed.Load() {
		return summary.Summary{}, sessionstore.ErrClosed
	}
	sum, _, err := logfile.Current(ctx, s.root, id)
	return sum, err
}
