package jsonlstore

import (
	"context"
	"errors"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/compact"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Compaction (package internal/compact, whose doc gives its steps and
// what a crash after each leaves) runs under a writer's lease: a holder
// compacts its own session (writer.Compact), and Store.Compact takes the
// lease for one compaction.

var _ maintenance.Compactor = (*writer)(nil)

// Compact trims the session by policy, under this writer's lease. Appends
// wait while it runs. An error before the log is replaced leaves the
// session as it was (the writer stays usable); an I/O error while the log
// is being replaced poisons the writer, as an append's would. A dry run
// writes nothing.
func (w *writer) Compact(ctx context.Context, p maintenance.CompactPolicy) (maintenance.CompactReport, error) {
	rep := maintenance.CompactReport{ID: w.id, DryRun: p.DryRun}
	if err := compact.Validate(p); err != nil {
		return rep, err
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.mayRewriteLocked(); err != nil {
		return rep, err
	}
	if !p.DryRun {
		w.ensureMarkLocked() // the catalog knows the log may change
	}
	return compact.Run(ctx, w.s.root, w.id, compactHolder{w}, p, rep)
}

// mayRewriteLocked is nil when w, its mutex held, may replace its log (a
// compaction, a redaction): it is usable and its lease is still its own.
func (w *writer) mayRewriteLocked() error {
	if err := w.usableLocked(); err != nil {
		return err
	}
	_, err := w.fenceLocked()
	return err
}

// compactHolder is a writer as compaction reaches it (compact.Holder),
// its mutex held by writer.Compact.
type compactHolder struct{ w *writer }

func (h compactHolder) Log() (vfs.Identity, int64, uint64) { return h.w.logID, h.w.size, h.w.rev }

func (h compactHolder) Replaced(f vfs.File, id vfs.Identity, cut int64) {
	w := h.w
	_ = w.log.Close() // the replaced log: synced, and superseded by f
	w.log, w.logID = f, id
	w.size -= cut
	w.lastOffset -= cut
}

func (h compactHolder) Fail(err error) { h.w.failed = err }

func (h compactHolder) WriteSummary(last *record.Rec, sum summary.Summary) {
	h.w.writeSummaryOf(last, sum, h.w.logStatAt(last))
}

func (h compactHolder) CollectBlobs(ctx context.Context) (maintenance.BlobCollection, error) {
	return h.w.s.blobs().Collect(ctx, h.w.id, h.w.ForgetBlob)
}

// Compact compacts session id by policy, standalone: it takes the lease —
// skipping a held session when wait is 0, else waiting up to wait — and
// releases it after. A skipped session is reported with Skipped set and a
// nil error.
//
// A dry run takes no lease and writes nothing (not even lease.json): it
// reads the log as any reader does and reports what a compaction would do
// now, skipping a held session when wait is 0 as a real run would. (A
// real run first recovers the log, so a log with an uncommitted tail is
// reported without it.)
func (s *Store) Compact(ctx context.Context, id session.SessionID, p maintenance.CompactPolicy, wait time.Duration) (maintenance.CompactReport, error) {
	rep := maintenance.CompactReport{ID: id, DryRun: p.DryRun}
	if err := compact.Validate(p); err != nil {
		return rep, err
	}
	if p.DryRun {
		return s.compactDryRun(ctx, id, p, wait, rep)
	}
	w, err := sessionstore.AcquireWithin(ctx, s, id, sessionstore.AcquireOptions{Label: "compact"}, wait)
	var held *sessionstore.LeaseHeldError
	if errors.As(err, &held) {
		rep.Skipped = held.Error()
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	defer func() { _ = w.Release(context.WithoutCancel(ctx)) }() // the compaction is durable either way; an unreleased lease goes stale
	return w.(*writer).Compact(ctx, p)
}

// compactDryRun is Compact's dry run: a reader's view of the log.
func (s *Store) compactDryRun(ctx context.Context, id session.SessionID, p maintenance.CompactPolicy, wait time.Duration, rep maintenance.CompactReport) (maintenance.CompactReport, error) {
	if wait <= 0 {
		st, err := s.Lease(ctx, id)
		if err != nil {
			return rep, err
		}
		if st.State == summary.LeaseHeld {
			rep.Skipped = (&sessionstore.LeaseHeldError{ID: id, Status: st}).Error()
			return rep, nil
		}
	}
	if err := s.check(ctx, id); err != nil {
		return rep, err
	}
	return compact.DryRun(ctx, s.root, id, p, rep)
}
