package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// writer is the holder of one session's lease.
type writer struct {
	s      *Store
	id     session.SessionID
	lease  leaseHandle
	report sessionstore.RecoveryReport

	mu         sync.Mutex // serializes appends; guards the fields below
	dir        vfs.SubFS  // the session directory, held open
	sum        logfile.SummaryWriter
	log        vfs.File // O_APPEND descriptor
	logID      vfs.Identity
	rev        uint64
	last       record.Meta // the latest record's envelope: what the next is checked against
	size       int64       // log size after the last append
	lastOffset int64       // offset of the last record
	app        *appender.Appender
	blobs      *blobfile.Writer // nil with FullRecordsOnly
	feed       searchhost.Feed  // what the writer tells the search index; nil: none
	failed     error            // set by the first I/O error; poisons the writer
	lost       error            // set when fencing fails; every later call returns it
	closed     bool
	mark       catalogfile.WriterMark // the catalog mark of this lease
	held       *heldRevision          // what recovery decoded, until used (resume.go)
}

var _ sessionstore.Writer = (*writer)(nil)

func (w *writer) ID() session.SessionID                 { return w.id }
func (w *writer) Generation() uint64                    { return w.lease.Generation() }
func (w *writer) Recovery() sessionstore.RecoveryReport { return w.report }

func (w *writer) Revision() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rev
}

// usableLocked reports why the writer cannot write, if it cannot.
func (w *writer) usableLocked() error {
	switch {
	case w.lost != nil:
		return w.lost
	case w.closed || w.s.closed.Load():
		return fmt.Errorf("%w: writer of session %s", sessionstore.ErrClosed, w.id)
	case w.failed != nil:
		return layout.OpErr("write", w.id, fmt.Errorf("%w: %w", sessionstore.ErrWriterFailed, w.failed))
	}
	return nil
}

// fenceLocked checks, before a write, that the lease is still this
// holder's and that the descriptor still refers to the session's log file
// (not one replaced or moved away under it). It returns what it found at
// the log's name.
func (w *writer) fenceLocked() (fs.FileInfo, error) {
	if err := w.lease.Check(); err != nil {
		w.lost = fmt.Errorf("%w: session %s: %w", sessionstore.ErrLeaseLost, w.id, err)
		return nil, w.lost
	}
	fi, err := w.dir.Lstat(LogFile)
	if err != nil || vfs.IdentityOf(fi) != w.logID {
		w.lost = fmt.Errorf("%w: session %s: log file replaced or removed", sessionstore.ErrLeaseLost, w.id)
		return nil, w.lost
	}
	return fi, nil
}

// Append writes snap as revision expected+1 with one write to the
// O_APPEND descriptor followed by fdatasync; the revision is durable when
// Append returns nil. Any I/O error poisons the writer: a retry on the same
// descriptor after a short write would glue a record onto a torn one, and
// a retried fsync after EIO can report success for data that is gone.
func (w *writer) Append(ctx context.Context, expected uint64, snap sessnap.Snapshot) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	m, err := record.Next(w.id, w.last, expected, w.lease.Generation(), w.s.opts.Now())
	if err != nil {
		return 0, err
	}
	fi, err := w.fenceLocked()
	if err != nil {
		return 0, err
	}
	// A hard link made since Acquire: writing would change the other name
	// too. Nothing is written, and the writer stays usable once the log
	// has a file of its own again.
	if err := logfile.LinkErr(w.id, fi); err != nil {
		return 0, err
	}
	// The catalog knows that the log may change before it does.
	w.ensureMarkLocked()
	rec := record.Rec{Meta: m}
	// Parts that arrive as references name blobs the session holds.
	if err := w.blobs.CheckRefs(w.id, snap.Messages); err != nil {
		return 0, err
	}
	// The record costs what changed (appender.go): a delta built from the
	// new messages and the changed members when the chain policy allows,
	// else a full record.
	line, err := w.app.Line(w.id, rec.Meta, &snap)
	if err != nil {
		return 0, err
	}
	// The blobs the record references are durable before it is written.
	if err := w.blobs.Sync(); err != nil {
		w.failed = err
		return 0, layout.OpErr("append", w.id, fmt.Errorf("%w: sync blobs: %w", sessionstore.ErrWriterFailed, err))
	}
	if err := layout.WriteAll(w.log, line); err != nil {
		w.failed = err
		return 0, layout.OpErr("append", w.id, fmt.Errorf("%w: write: %w", sessionstore.ErrWriterFailed, err))
	}
	if err := w.log.Datasync(); err != nil {
		w.failed = err
		// The record is whole in the file, but after a failed fdatasync
		// the kernel may have given up on its pages while still serving
		// them from its cache. Cut it (best effort, not synced), so that
		// neither a reader nor the next holder in this boot takes it for
		// committed and builds on it: the next holder's successful sync
		// would then make its records durable after a hole.
		_ = w.log.Truncate(w.size)
		return 0, layout.OpErr("append", w.id, fmt.Errorf("%w: sync: %w", sessionstore.ErrWriterFailed, err))
	}
	rec.Offset, rec.LineLen = w.size, int64(len(line))
	w.rev, w.last = rec.Rev, rec.Meta
	w.lastOffset, w.size = rec.Offset, rec.End()
	// One fstat serves the summary and the search index: the state of the
	// log they both record.
	after := w.logStatAt(&rec)
	w.writeSummary(&rec, &snap, after)
	w.touchLease(rec.Time)
	w.indexAppended(&rec, &snap, after)
	return rec.Rev, nil
}

// touchLease lets the append, whose record has time at, count as a
// heartbeat, so that a busy holder never looks idle to readers (Lease,
// List, Watch): at most once a second it sets lease.lock's modification
// time (fslease.Lease.Touch), one system call that writes no data and
// syncs nothing, so that an append costs no more for it
// (BenchmarkAppendTouch). Failure is logged, not returned: the append is
// durable.
func (w *writer) touchLease(at time.Time) {
	if err := w.lease.Touch(at); err != nil {
		w.s.opts.Logger.Warn("jsonlstore: lease heartbeat not refreshed", "session", w.id, "err", err)
	}
}

// logStatAt returns the state of the log (one fstat) when it ends with
// record rec, its last, as the summary and the search index record it;
// nil when it cannot tell or the log is not that.
func (w *writer) logStatAt(rec *record.Rec) fs.FileInfo {
	fi, err := w.log.Stat()
	if err != nil || fi.Size() != rec.End() {
		return nil
	}
	return fi
}

// writeSummary refreshes summary.json. Failure is harmless (the summary is
// a cache, recomputed from the log when it does not match), so it is
// logged, not returned. fi is the log's state (logStatAt).
func (w *writer) writeSummary(rec *record.Rec, snap *sessnap.Snapshot, fi fs.FileInfo) {
	if fi == nil {
		return // the summary is a cache: none is better than a wrong one
	}
	w.writeSummaryOf(rec, logfile.ProjectRecord(rec, snap, rec.End()), fi)
}

// writeSummaryOf writes sum, the summary of record rec, the log's last;
// fi is the log's state ending with rec (logStatAt), nil when unknown.
func (w *writer) writeSummaryOf(rec *record.Rec, sum summary.Summary, fi fs.FileInfo) {
	// The log's modification time after the append (fi) makes the
	// summary a cache of exactly this state of the file (no sync).
	if fi == nil {
		return // the summary is a cache: none is better than a wrong one
	}
	sum.Sizes.LogBytes = rec.End()
	sf := logfile.SummaryFile{
		Log: w.logID, LogSize: rec.End(), LogMtime: fi.ModTime().UnixNano(), LastOffset: rec.Offset, Revision: rec.Rev,
		Summary: sum,
	}
	if err := w.sum.Write(w.dir, sf); err != nil {
		w.s.opts.Logger.Warn("jsonlstore: summary not refreshed", "session", w.id, "err", err)
	}
}

// lockLeased locks w for an operation of the lease holder that a failed
// writer may still do (Heartbeat, Delete): ctx not done, the writer not
// released or superseded, the lease fenced. On success w.mu is held: call
// the returned unlock.
func (w *writer) lockLeased(ctx context.Context) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	if err := w.usableLocked(); err != nil && !errors.Is(err, sessionstore.ErrWriterFailed) {
		w.mu.Unlock()
		return nil, err
	}
	if _, err := w.fenceLocked(); err != nil {
		w.mu.Unlock()
		return nil, err
	}
	return w.mu.Unlock, nil
}

// Heartbeat implements sessionstore.Writer.
func (w *writer) Heartbeat(ctx context.Context) error {
	unlock, err := w.lockLeased(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := w.lease.Heartbeat(ctx); err != nil {
		return fmt.Errorf("%w: session %s: %w", sessionstore.ErrLeaseLost, w.id, err)
	}
	return nil
}

// Release implements sessionstore.Writer.
func (w *writer) Release(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return nil
	}
	w.closed = true
	w.held = nil
	err := w.log.Close()
	w.log = nil
	w.sum.Close()
	w.mark.Close()
	_ = w.dir.Close()
	if rerr := w.lease.Release(ctx); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return layout.OpErr("release", w.id, err)
	}
	return nil
}

// Delete removes the session: under the lease, the directory is renamed to
// a trash name (so the session disappears atomically), the rename is made
// durable, the lease is released, and the trash is removed. A crash leaves
// a trash directory that the next sweep removes.
func (w *writer) Delete(ctx context.Context) error {
	unlock, err := w.lockLeased(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	s := w.s
	trash := layout.TrashPrefix + string(w.id) + "-" + layout.RandomSuffix()
	w.closed = true
	_ = w.log.Close()
	w.log = nil
	w.sum.Close()
	_ = w.dir.Close()
	if err := s.fs.RenameNoReplace(layout.SessionDir(w.id), trash); err != nil {
		_ = w.lease.Release(ctx)
		return layout.OpErr("delete", w.id, err)
	}
	err = s.fs.SyncDir(".")
	w.mark.Close()
	if err == nil {
		s.cat.Unmark(w.id, w.lease.Generation()) // the session is gone, durably
	}
	_ = w.lease.Moved(s.root.Abs(trash))
	_ = w.lease.Release(context.WithoutCancel(ctx))
	s.indexDeleted(w.id)
	if rerr := s.fs.RemoveAll(trash); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return layout.OpErr("delete", w.id, err)
	}
	return nil
}
