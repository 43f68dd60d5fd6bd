package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Recovery runs under a freshly acquired lease, before the holder's first
// append. It reads the log backwards from its end (record.Back) and
// decides what the bytes after the last valid record are
// (record.ClassifyTail): nothing; an uncommitted tail, copied into a
// forensic file (synced, with its directory) and only then cut, and
// reported; or corruption, which is never removed: Acquire fails with a
// *sessionstore.CorruptionError and `sessions repair` is the explicit way
// out. It also checks the records the holder builds on — the last record,
// its chain back to a full record, and the records just before — as a
// sequence (a duplicated piece of the log is refused, naming it), and
// refuses a log whose last records a newer program wrote
// (sessionstore.ErrSchemaTooNew): those are committed, never a tail, and
// this program does not write after them.

// recovered is what recovery found: the log's last record (payload
// copied) and its delta chain, for the writer.
type recovered struct {
	last   *record.Rec
	full   *record.Rec
	deltas []*record.Rec
	// held is the latest revision as recovery decoded it, without its
	// content (nil after a gap): what the writer resumes from (resume.go).
	held *sessionstore.Record
	// track is the chain applied (appender.ResumeChain), for the writer's
	// appender; nil when the chain is no base for a delta.
	track *record.Tracker
}

// rebuildForWriter returns the snapshot of last, which full and deltas
// rebuild (logfile.RebuildChain, with its errors), and the tracker the
// writer's appender resumes on: the chain is applied once, for both.
// The tracker is nil after a gap, and when the chain's full record is no
// base for one (the next record is then full, and recovery goes on).
func rebuildForWriter(id session.SessionID, last, full *record.Rec, deltas []*record.Rec, maxPayload int) ([]byte, *record.Tracker, error) {
	if last.Kind == record.KindGap || full == nil || full.Kind != record.KindFull {
		snap, err := logfile.RebuildChain(id, last, full, deltas, maxPayload)
		return snap, nil, err
	}
	tr, err := appender.ResumeChain(full, deltas, maxPayload)
	if err != nil && len(deltas) > 0 {
		return nil, nil, logfile.ChainError(id, last, full, err)
	}
	if len(deltas) == 0 {
		// The full record is the revision; tr is nil when it is no base
		// for a tracker (err).
		return full.Payload, tr, nil
	}
	return tr.Snapshot(), tr, nil
}

// recoverLog analyses session id's log under the lease and removes an
// uncommitted tail.
func (s *Store) recoverLog(id session.SessionID, report *sessionstore.RecoveryReport) (recovered, error) {
	var rc recovered
	v, err := logfile.Open(s.fs, id, s.opts.MaxRecordBytes)
	if err != nil {
		if lerr := logfile.LogErr(s.root, id, err); lerr != nil {
			return rc, lerr // gone, or damaged (logfile.LogErr)
		}
		return rc, layout.OpErr("recover", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	last, t, err := v.Back.Last()
	if err != nil {
		return rc, s.refuse(id, err)
	}
	if err := record.ClassifyTail(id, v.Name, last, t, logfile.Evidence(s.fs, id, v), v.Back.At); err != nil {
		return rc, err
	}
	full, deltas, err := v.Back.ChainTo(last, true)
	if err != nil {
		return rc, s.refuse(id, err)
	}
	if ne := v.Back.Newer; ne != nil {
		return rc, s.refuse(id, ne)
	}
	// The latest revision must rebuild, and be a snapshot of this session
	// (its content left out of line): no holder builds on a snapshot it
	// cannot read.
	snap, track, err := rebuildForWriter(id, last, full, deltas, v.MaxPayload)
	if err != nil {
		return rc, err
	}
	rc.last, rc.full, rc.deltas, rc.track = last.Clone(), full, deltas, track
	if last.Kind != record.KindGap {
		c := blobfile.NewPageCache(s.fs, id)
		held, err := logfile.DecodeRecord(id, last, snap, c)
		c.Close()
		if err != nil {
			return rc, err
		}
		rc.held = &held
	}
	if t.Bytes == 0 {
		return rc, nil
	}
	forensic, err := s.saveForensic(id, "tail", t.Start, v, t.Bytes)
	if err != nil {
		return rc, layout.OpErr("recover", id, fmt.Errorf("save tail: %w", err))
	}
	f, err := s.fs.OpenFile(layout.LogPath(id), os.O_WRONLY, 0)
	if err != nil {
		return rc, layout.OpErr("recover", id, err)
	}
	defer func() { _ = f.Close() }() // Datasync below reports any write error; Close loses nothing after it
	if err := f.Truncate(t.Start); err != nil {
		return rc, layout.OpErr("recover", id, fmt.Errorf("truncate: %w", err))
	}
	// Make the truncation durable now. The first append's fdatasync would
	// persist it too, but a crash before that append would bring the tail
	// back, and the next holder would copy and report it a second time:
	// completed recovery must stay done.
	if err := f.Datasync(); err != nil {
		return rc, layout.OpErr("recover", id, fmt.Errorf("sync truncate: %w", err))
	}
	report.TailOffset, report.TailBytes, report.ForensicFile = t.Start, t.Bytes, forensic
	s.opts.Logger.Info("jsonlstore: removed uncommitted tail", "session", id, "offset", t.Start, "bytes", t.Bytes, "forensic", forensic)
	return rc, nil
}

// refuse is the error of an acquisition that must not write to the log:
// a newer program's records (ErrSchemaTooNew, said where), or corruption.
func (s *Store) refuse(id session.SessionID, err error) error {
	var ne *sessionstore.NewerRecordError
	if errors.As(err, &ne) {
		return layout.OpErr("acquire", id, ne)
	}
	return err
}

// appenderAfterRecovery returns a writer's append state for the chain
// recovery found: resumed from it, so that the next record can be a delta
// on it.
func (s *Store) appenderAfterRecovery(id session.SessionID, rc recovered) (*appender.Appender, *blobfile.Writer) {
	app, blobs := s.newAppender(layout.SessionDir(id))
	// The cap is the store's: a holder whose own cap is smaller writes
	// with the one the session records (layout.ReadCap), so that it can go on
	// from the records written under it.
	app.Max = layout.ReadCap(s.fs, id, s.opts.MaxRecordBytes)
	if rc.track == nil && rc.full != nil && rc.full.Kind == record.KindFull && !app.FullOnly {
		s.opts.Logger.Warn("jsonlstore: delta chain of the latest revision not resumed; the next revision is written in full", "session", id)
	}
	app.ResumeWith(rc.full, rc.deltas, rc.track)
	return app, blobs
}

// saveForensic copies n bytes of v from off into a new file of session
// id's forensic/, durably (logfile.SaveForensic).
func (s *Store) saveForensic(id session.SessionID, what string, off int64, v *logfile.View, n int64) (string, error) {
	return logfile.SaveForensic(s.root, id, what, off, v, n)
}

// acquire takes the lease of an existing session and recovers it.
func (s *Store) acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (sessionstore.Writer, error) {
	if err := s.checkSession(ctx, id); err != nil {
		return nil, err
	}
	lease, marked, err := s.leaseSession(ctx, id, opts, try)
	if err != nil {
		return nil, err
	}
	w, err := s.openWriter(id, lease, marked)
	if err != nil {
		_ = lease.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	if opts.Redactor != nil {
		w.app.Redact = redact.NewStream(opts.Redactor)
	}
	return w, nil
}

// leaseSession takes the lease of existing session id, of a generation
// above every one its log holds (logFloor), and marks it (takeLease); its
// errors are the contract's (leaseErr).
func (s *Store) leaseSession(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (_ leaseHandle, marked bool, _ error) {
	minGen, err := logfile.LogFloor(s.root, id)
	if err != nil {
		return nil, false, err
	}
	lease, marked, err := s.takeLease(ctx, id, layout.SessionDir(id), try, s.leaseOptions(opts, minGen))
	if err != nil {
		return nil, false, s.leaseErr(ctx, id, err)
	}
	return lease, marked, nil
}

// leaseErr maps an fslease acquisition error to the contract's errors.
func (s *Store) leaseErr(ctx context.Context, id session.SessionID, err error) error {
	switch {
	case isHeld(err):
		st, ierr := s.Lease(context.WithoutCancel(ctx), id)
		if ierr != nil {
			st = summary.LeaseStatus{State: summary.LeaseHeld}
		}
		return &sessionstore.LeaseHeldError{ID: id, Status: st}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: session %s (deleted)", sessionstore.ErrNotFound, id)
	case ctx.Err() != nil:
		return layout.OpErr("acquire", id, ctx.Err())
	}
	return layout.OpErr("acquire", id, err)
}

// openWriter recovers the log under lease and opens it for appending;
// marked says whether takeLease made the lease's catalog mark.
func (s *Store) openWriter(id session.SessionID, lease leaseHandle, marked bool) (*writer, error) {
	report := sessionstore.RecoveryReport{Generation: lease.Generation(), Previous: previousStatus(lease)}
	if err := s.checkWritable(id); err != nil {
		return nil, err
	}
	rc, err := s.recoverLog(id, &report)
	if err != nil {
		return nil, err
	}
	last := rc.last
	// The floor acquire passed to the lease is read from the log before
	// the lease is held and ignores read errors; if it was missed while
	// the lease record was lost, the lease's generation may not be above
	// the log's. Never write under such a generation.
	if last.Gen >= lease.Generation() {
		return nil, layout.OpErr("acquire", id, fmt.Errorf("lease generation %d is not above generation %d in the log (lease record lost?); retry", lease.Generation(), last.Gen))
	}
	report.Swept = s.sweepSession(id)
	if err := s.root.RecordCap(layout.SessionDir(id), true); err != nil {
		return nil, err
	}
	f, err := s.fs.OpenFile(layout.LogPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, layout.OpErr("open log", id, err)
	}
	app, blobs := s.appenderAfterRecovery(id, rc)
	w, err := s.newWriter(id, lease, f, last, app, blobs, report, marked)
	if err != nil {
		_ = f.Close()
		return nil, layout.PathErr("acquire", id, layout.LogPath(id), fmt.Errorf("open the log after recovery: %w", err))
	}
	w.holdRecovered(rc)
	return w, nil
}

// sweepSession removes leftover temporary files in a session directory
// (logfile.SweepSession); called under the lease.
func (s *Store) sweepSession(id session.SessionID) []string { return logfile.SweepSession(s.fs, id) }

// Acquire implements sessionstore.Store.
func (s *Store) Acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, false)
}

// TryAcquire implements sessionstore.Store.
func (s *Store) TryAcquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, true)
}

// checkWritable runs under a freshly taken lease, before anything is
// written (logfile.CheckWritable).
func (s *Store) checkWritable(id session.SessionID) error { return logfile.CheckWritable(s.root, id) }
