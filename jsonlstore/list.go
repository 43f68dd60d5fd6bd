package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// sessionIDs lists the session directories under the root, skipping
// leftovers and anything that is not a valid session ID.
func (s *Store) sessionIDs() ([]session.SessionID, error) {
	entries, err := s.fs.ReadDir(".")
	if err != nil {
		return nil, layout.OpErr("list root", "", err)
	}
	ids := make([]session.SessionID, 0, len(entries))
	for _, e := range entries {
		id := session.SessionID(e.Name())
		if !e.IsDir() || sessionstore.ValidateID(id) != nil {
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// forSessions calls fn for each of ids in order or, when ids is empty,
// for every session (sessionIDs). It reports whether it listed all
// sessions. A session deleted meanwhile (fn returned ErrNotFound while
// all are listed) is skipped. An error of fn that concerns its session
// alone — anything but a done context, a closed store, or ErrInvalidID or
// ErrNotFound for a given ID — is added to bad, and the loop goes on: one
// bad session never stops a store-wide operation. With bad nil, every
// error but the skipped ones ends the loop (fn reports what it may).
func (s *Store) forSessions(ids []session.SessionID, fn func(id session.SessionID) error, bad *[]summary.Unreadable) (all bool, err error) {
	if s.closed.Load() {
		return false, sessionstore.ErrClosed
	}
	all = len(ids) == 0
	if all {
		if ids, err = s.sessionIDs(); err != nil {
			return all, err
		}
	}
	for _, id := range ids {
		err := fn(id)
		switch {
		case err == nil:
		case all && errors.Is(err, sessionstore.ErrNotFound):
			// deleted meanwhile, or not a session
		case bad == nil, logfile.EndsStoreWide(err), errors.Is(err, sessionstore.ErrInvalidID), errors.Is(err, sessionstore.ErrNotFound):
			return all, err
		default:
			*bad = append(*bad, summary.UnreadableOf(id, err))
		}
	}
	return all, nil
}

// summaryOf returns session id's summary without its lease status: from
// summary.json when it was written for exactly the log on disk (same file
// identity and size, and the record it names still carries its revision),
// else computed from the log's tail. Its cost does not depend on the
// length of the history.
func (s *Store) summaryOf(ctx context.Context, id session.SessionID) (summary.Summary, error) {
	sum, _, err := s.summaryState(ctx, id)
	return sum, err
}

// summaryState is summaryOf, with the state of the log the summary
// describes (for the catalog).
func (s *Store) summaryState(ctx context.Context, id session.SessionID) (summary.Summary, catalog.LogState, error) {
	if sf, ok := logfile.ReadSummary(s.fs, id); ok {
		if fi, err := s.fs.Lstat(layout.LogPath(id)); err == nil && sf.Matches(fi) && s.revisionAt(id, sf.LastOffset) == sf.Revision {
			sum := sf.Summary
			sum.Sizes.LogBytes = fi.Size()
			return sum, logStateOf(fi), nil
		}
	}
	return s.summaryFromLog(ctx, id)
}

// summaryFromLog computes session id's summary from its log's tail, with
// the state of the log it read.
func (s *Store) summaryFromLog(ctx context.Context, id session.SessionID) (summary.Summary, catalog.LogState, error) {
	var sum summary.Summary
	var st catalog.LogState
	err := s.read(ctx, id, func(v *logfile.View) error {
		var err error
		_, sum, err = logfile.LatestSummary(s.fs, id, v)
		st = catalog.LogState{Dev: v.ID.Dev, Ino: v.ID.Ino, Size: v.Size, Mtime: v.Mtime}
		return err
	})
	return sum, st, err
}

// revisionAt reads the revision of the record at off, or 0.
func (s *Store) revisionAt(id session.SessionID, off int64) uint64 {
	f, err := s.fs.OpenFile(layout.LogPath(id), layout.RDONLY, 0)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read-only
	var buf [64]byte
	n, _ := f.ReadAt(buf[:], off)
	rev, ok := record.PeekRev(buf[:n])
	if !ok {
		return 0
	}
	return rev
}

// List returns a page of summaries. When the watcher runs (see Watch) and
// confirms that its index is current, the page comes from the index;
// otherwise from the catalog (catalog.go) when it can be trusted, else
// every session's summary is read from disk (listscan.go), and the
// catalog is rewritten for the next listing. Either way its cost grows
// with the number of sessions and the page, not with the length of their
// histories, and lease status is computed for the page's items only, when
// read.
func (s *Store) List(ctx context.Context, q summary.Query) (summary.Page, error) {
	if s.closed.Load() {
		return summary.Page{}, sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return summary.Page{}, err
	}
	if _, err := q.Normalize(); err != nil {
		return summary.Page{}, err
	}
	if page, ok, err := s.listIndexed(ctx, q); ok {
		s.listings.indexed.Add(1)
		return page, err
	}
	page, served, cl, err := s.listCatalog(ctx, q)
	switch {
	case err == nil && served:
		s.listings.catalog.Add(1)
	case err == nil:
		s.listings.scanned.Add(1)
		page, err = s.listScan(ctx, q)
	}
	if err == nil {
		s.keepCatalog(ctx, cl)
	}
	return page, err
}

// Lease reports the lease status of session id, computed now from the lock
// (a probe that takes and drops a shared lock) and lease.json.
func (s *Store) Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error) {
	if err := s.checkSession(ctx, id); err != nil {
		return summary.LeaseStatus{}, err
	}
	st, err := s.leases.inspect(ctx, s.root.Abs(layout.SessionDir(id)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return summary.LeaseStatus{}, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
		}
		return summary.LeaseStatus{}, layout.OpErr("lease", id, err)
	}
	return leaseStatus(st, s.opts.Now()), nil
}
