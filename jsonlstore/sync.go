package jsonlstore

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/offline"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// Sync brings this store (A) and the store at other (B, created if
// missing) to the union of their sessions, then verifies what it wrote
// on each side. A session on one side only is copied to the other; one
// appended on one side only is brought up to date on the other, only its
// new bytes copied; one appended on both sides since their last common
// revision stays as it is on each side, and each side gets the other's
// branch as a new session, a fork of it labelled with the revision where
// they diverged (maintenance.SyncFork). A session a live writer holds on
// either side is skipped and reported. Neither store may lie inside the
// other.
func (s *Store) Sync(ctx context.Context, other string, opts maintenance.SyncOptions) (maintenance.SyncReport, error) {
	rep := maintenance.SyncReport{A: s.dir, B: other}
	if s.closed.Load() {
		return rep, sessionstore.ErrClosed
	}
	if err := offline.CheckBackupDest(s.osRoot, s.dir, other); err != nil {
		return rep, err
	}
	o, err := Open(other, Options{MaxRecordBytes: s.opts.MaxRecordBytes})
	if err != nil {
		return rep, err
	}
	defer func() { _ = o.Close() }() // every copy is synced and closed on its own
	if err := offline.CheckBackupDest(o.osRoot, o.dir, s.dir); err != nil {
		return rep, err
	}
	toA, toB, err := s.offline().Sync(ctx, o.offline(), opts, &rep)
	if err != nil {
		return rep, err
	}
	if len(toA) > 0 {
		if rep.VerifyA, err = s.Verify(ctx, toA...); err != nil {
			return rep, err
		}
	}
	if len(toB) > 0 {
		rep.VerifyB, err = o.Verify(ctx, toB...)
	}
	return rep, err
}
