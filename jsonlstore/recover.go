package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Recovery runs under a freshly acquired lease, before the holder's first
// append. It decides what the bytes after the log's last valid record are:
//
//   - nothing: the log is clean;
//   - an uncommitted tail: what a single torn append leaves (a partial
//     line, NULs where pages were lost, one newline-terminated line that
//     fails its checksum and claims the next revision). It was never
//     acknowledged, so it is copied into a forensic file (synced, with its
//     directory) and only then truncated away, and the report says so;
//   - corruption: anything else — a damaged line that claims a revision
//     already committed, more than one damaged line, or a revision that a
//     summary evidences but the log no longer holds. Nothing is removed;
//     Acquire fails with a *sessionstore.CorruptionError and `sessions
//     repair` is the explicit way out.

// evidencedRevision returns the highest revision known to have been
// committed to the log v views, from sources other than the log itself: a
// summary written for this very log file (a summary of another file, as
// in a copy made with cp, proves nothing about this one).
func (s *Store) evidencedRevision(id session.SessionID, v *view) uint64 {
	sf, ok := readSummaryFile(s.fs, id)
	if !ok || sf.Log != v.id || sf.LogSize > v.size {
		return 0
	}
	return sf.Revision
}

// classifyTail returns nil when t is an uncommitted tail that may be
// removed, or the corruption it is evidence of.
func (s *Store) classifyTail(id session.SessionID, v *view, last *rawRecord, t tail) error {
	corrupt := func(rev uint64, format string, args ...any) error {
		return &sessionstore.CorruptionError{ID: id, Path: v.name, Offset: t.Start, Revision: rev, Err: fmt.Errorf(format, args...)}
	}
	if last == nil {
		return corrupt(0, "log holds no valid record")
	}
	if ev := s.evidencedRevision(id, v); ev > last.Rev {
		return corrupt(last.Rev+1, "revision %d was committed (summary) but the log's last valid record is %d", ev, last.Rev)
	}
	if t.Bytes == 0 {
		return nil
	}
	if t.Lines > 1 {
		return corrupt(last.Rev+1, "%d damaged lines after the last valid record (a torn append leaves at most one)", t.Lines)
	}
	if t.Lines == 1 && t.Claimed && t.ClaimedRev != last.Rev+1 {
		return corrupt(t.ClaimedRev, "damaged line claims revision %d after revision %d", t.ClaimedRev, last.Rev)
	}
	return nil
}

// recoverLog analyses the log under the lease and removes an uncommitted
// tail. It returns the last valid record (payload copied) and the state of
// its delta chain.
func (s *Store) recoverLog(id session.SessionID, report *sessionstore.RecoveryReport) (*rawRecord, chainState, error) {
	var chain chainState
	last, err := s.recoverLogChain(id, report, &chain)
	return last, chain, err
}

func (s *Store) recoverLogChain(id session.SessionID, report *sessionstore.RecoveryReport, chain *chainState) (*rawRecord, error) {
	v, err := openView(s.fs, logPath(id), s.opts.MaxRecordBytes)
	if err != nil {
		return nil, fmt.Errorf("jsonlstore: recover %s: %w", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	last, t, err := v.last()
	if err != nil {
		return nil, fmt.Errorf("jsonlstore: recover %s: %w", id, err)
	}
	if err := s.classifyTail(id, v, last, t); err != nil {
		return nil, err
	}
	last = copyRecord(last)
	s.chainAfterRecovery(id, v, last, chain)
	if t.Bytes == 0 {
		return last, nil
	}
	forensic, err := s.saveForensic(id, "tail", t.Start, v, t.Bytes)
	if err != nil {
		return nil, fmt.Errorf("jsonlstore: recover %s: save tail: %w", id, err)
	}
	f, err := s.fs.OpenFile(logPath(id), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("jsonlstore: recover %s: %w", id, err)
	}
	defer func() { _ = f.Close() }() // Datasync below reports any write error; Close loses nothing after it
	if err := f.Truncate(t.Start); err != nil {
		return nil, fmt.Errorf("jsonlstore: recover %s: truncate: %w", id, err)
	}
	// Make the truncation durable now. The first append's fdatasync would
	// persist it too, but a crash before that append would bring the tail
	// back, and the next holder would copy and report it a second time:
	// completed recovery must stay done.
	if err := f.Datasync(); err != nil {
		return nil, fmt.Errorf("jsonlstore: recover %s: sync truncate: %w", id, err)
	}
	report.TailOffset, report.TailBytes, report.ForensicFile = t.Start, t.Bytes, forensic
	s.opts.Logger.Info("jsonlstore: removed uncommitted tail", "session", id, "offset", t.Start, "bytes", t.Bytes, "forensic", forensic)
	return last, nil
}

// chainAfterRecovery sets chain to the state of the chain that ends at
// last, the log's last valid record. When that chain cannot be read (a
// damaged base, a newer kind), the next append is a full record: the
// writer never builds a delta on a snapshot it could not rebuild, and
// readers report the damage.
func (s *Store) chainAfterRecovery(id session.SessionID, v *view, last *rawRecord, chain *chainState) {
	switch last.Kind {
	case KindFull:
		chain.Start(last.Payload)
		return
	case KindDelta:
	default:
		return
	}
	full, deltas, err := s.chainOf(id, v, last)
	if err != nil {
		s.opts.Logger.Warn("jsonlstore: delta chain of the latest revision unreadable; the next revision is written in full", "session", id, "err", err)
		return
	}
	snap, _, err := rebuild(full.Payload, deltas, v.maxPayload)
	if err != nil {
		s.opts.Logger.Warn("jsonlstore: delta chain of the latest revision does not rebuild; the next revision is written in full", "session", id, "err", err)
		return
	}
	held := 0
	for _, d := range deltas {
		held += int(d.LineLen)
	}
	chain.Resume(snap, len(full.Payload), len(deltas), held)
}

// saveForensic copies n bytes of v from off into a new file under the
// session's forensic directory, durably (file and directory synced), and
// returns its path relative to the root. Removed bytes are never lost.
func (s *Store) saveForensic(id session.SessionID, what string, off int64, v *view, n int64) (string, error) {
	dir := sessionDir(id) + "/" + ForensicDir
	created := false
	if err := s.fs.Mkdir(dir, dirPerm); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	name := dir + "/" + what + "-" + strconv.FormatInt(off, 10) + "-" + s.opts.Now().UTC().Format("20060102T150405.000000000Z") + ".bin"
	f, err := s.fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return "", err
	}
	buf := make([]byte, min(n, 1<<20))
	for done := int64(0); done < n; {
		k := min(int64(len(buf)), n-done)
		if _, err := v.f.ReadAt(buf[:k], off+done); err != nil {
			_ = f.Close()
			return "", readErr(err)
		}
		if err := writeAll(f, buf[:k]); err != nil {
			_ = f.Close()
			return "", err
		}
		done += k
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.SyncDir(dir)
	}
	if err == nil && created {
		err = s.fs.SyncDir(sessionDir(id))
	}
	return name, err
}

// acquire takes the lease of an existing session and recovers it.
func (s *Store) acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (sessionstore.Writer, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	if err := s.exists(id); err != nil {
		return nil, err
	}
	// The new generation must be above every generation in the log, even if
	// lease.json was lost or is an older copy: read the last record's (the
	// log's generations never decrease).
	var minGen uint64
	if v, err := openView(s.fs, logPath(id), s.opts.MaxRecordBytes); err == nil {
		if last, _, err := v.last(); err == nil && last != nil {
			minGen = last.Gen
		}
		_ = v.Close() // read-only
	}
	lease, err := s.leases.acquire(ctx, s.abs(sessionDir(id)), try, s.leaseOptions(opts, minGen))
	if err != nil {
		return nil, s.leaseErr(ctx, id, err)
	}
	w, err := s.openWriter(id, lease)
	if err != nil {
		_ = lease.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
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
		return fmt.Errorf("jsonlstore: acquire %s: %w", id, ctx.Err())
	}
	return fmt.Errorf("jsonlstore: acquire %s: %w", id, err)
}

// openWriter recovers the log under lease and opens it for appending.
func (s *Store) openWriter(id session.SessionID, lease leaseHandle) (*writer, error) {
	report := sessionstore.RecoveryReport{Generation: lease.Generation(), Previous: previousStatus(lease)}
	if err := s.checkNoSymlinks(id); err != nil {
		return nil, err
	}
	last, chain, err := s.recoverLog(id, &report)
	if err != nil {
		return nil, err
	}
	// The floor acquire passed to the lease is read from the log before
	// the lease is held and ignores read errors; if it was missed while
	// the lease record was lost, the lease's generation may not be above
	// the log's. Never write under such a generation.
	if last.Gen >= lease.Generation() {
		return nil, fmt.Errorf("jsonlstore: acquire %s: lease generation %d is not above generation %d in the log (lease record lost?); retry", id, lease.Generation(), last.Gen)
	}
	report.Swept = s.sweepSession(id)
	f, err := s.fs.OpenFile(logPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("jsonlstore: open log %s: %w", id, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("jsonlstore: open log %s: %w", id, err)
	}
	if fi.Size() != last.End() {
		_ = f.Close()
		return nil, fmt.Errorf("jsonlstore: open log %s: size %d after recovery, expected %d", id, fi.Size(), last.End())
	}
	dir, err := vfs.Sub(s.fs, sessionDir(id))
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("jsonlstore: open session %s: %w", id, err)
	}
	return &writer{
		s: s, id: id, lease: lease, log: f, logID: vfs.IdentityOf(fi), dir: dir,
		rev: last.Rev, lastTime: last.Time, lastSchema: last.Schema, size: fi.Size(), lastOffset: last.Offset,
		report: report, chain: chain,
	}, nil
}

// checkNoSymlinks refuses a session directory that contains a symlink: a
// session holds only regular files and directories, so a link is tampering
// or a hostile copy, and no holder writes into such a directory.
func (s *Store) checkNoSymlinks(id session.SessionID) error {
	entries, err := s.fs.ReadDir(sessionDir(id))
	if err != nil {
		return fmt.Errorf("jsonlstore: session %s: %w", id, err)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("jsonlstore: session %s: %s: %w", id, e.Name(), vfs.ErrSymlink)
		}
	}
	return nil
}

// sweepSession removes leftover temporary files in a session directory
// (torn summary and lease replacements); called under the lease.
func (s *Store) sweepSession(id session.SessionID) []string {
	entries, err := s.fs.ReadDir(sessionDir(id))
	if err != nil {
		return nil
	}
	var swept []string
	for _, e := range entries {
		name := e.Name()
		if len(name) > 0 && name[0] == '.' && len(name) > len(tmpSuffix) && name[len(name)-len(tmpSuffix):] == tmpSuffix {
			p := sessionDir(id) + "/" + name
			if s.fs.Remove(p) == nil {
				swept = append(swept, p)
			}
		}
	}
	return swept
}

// Acquire implements sessionstore.Store.
func (s *Store) Acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, false)
}

// TryAcquire implements sessionstore.Store.
func (s *Store) TryAcquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, true)
}
