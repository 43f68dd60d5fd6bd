package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
)

// Compaction trims a session's old revisions into a zstd archive segment
// and replaces the log with one that starts at the first kept revision.
// It runs under the session's lease. The steps, and what a crash after
// each leaves:
//
//  1. Stream the trimmed records' lines (verified) into
//     archive/.<segment>.tmp through zstd; fsync. Crash: a temp file,
//     ignored and swept.
//  2. Verify the temp segment by decompressing it; rename it to its final
//     name; fsync archive/. Crash: a segment the manifest does not list,
//     ignored and reclaimed.
//  3. Write the manifest listing the segment (temp, fsync, rename, fsync).
//     Crash: a listed segment that overlaps the log, which is still
//     authoritative for those revisions: readers ignore the segment, the
//     next compaction reclaims it.
//  4. Copy the kept records byte for byte into .log.jsonl.compact-*.tmp,
//     fsync, rename over log.jsonl, fsync the session directory. Crash
//     before the rename is durable: the old log (all revisions) and an
//     overlapping segment; after: the new log and the segment, together
//     holding every revision exactly once.
//
// Revision numbers never change, and every byte of every record is kept.

// CompactPolicy says which revisions compaction keeps. A revision is kept
// when any rule keeps it; the latest revision is always kept. With no rule
// set, nothing is trimmed.
type CompactPolicy struct {
	// KeepLast keeps the last KeepLast revisions (0: no such rule).
	KeepLast int
	// KeepSince keeps revisions written within this duration of now (0:
	// no such rule).
	KeepSince time.Duration
	// DryRun computes the report without changing anything.
	DryRun bool
}

// CompactReport says what a compaction did (or, for a dry run, would do).
type CompactReport struct {
	ID session.SessionID `json:"id"`
	// Skipped is why the session was not compacted ("" if it was, or
	// would be).
	Skipped          string `json:"skipped,omitempty"`
	DryRun           bool   `json:"dry_run,omitempty"`
	RevisionsTrimmed int64  `json:"revisions_trimmed"`
	FirstKept        uint64 `json:"first_kept"`
	Latest           uint64 `json:"latest"`
	LogBytesBefore   int64  `json:"log_bytes_before"`
	LogBytesAfter    int64  `json:"log_bytes_after"`
	// ArchiveBytes is the new segment's compressed size; Segment its path.
	ArchiveBytes int64  `json:"archive_bytes"`
	Segment      string `json:"segment,omitempty"`
	// Reclaimed lists stale files removed: segments a crashed compaction
	// left overlapping the log, temporary files.
	Reclaimed []string `json:"reclaimed,omitempty"`
}

// Compactor is implemented by the writers of a jsonlstore.Store: a holder
// can compact its own session without releasing its lease.
type Compactor interface {
	Compact(ctx context.Context, p CompactPolicy) (CompactReport, error)
}

var _ Compactor = (*writer)(nil)

// Compact trims the session by policy, under this writer's lease. Appends
// wait while it runs. An error before the log is replaced leaves the
// session as it was (the writer stays usable); an I/O error while the log
// is being replaced poisons the writer, as an append's would.
func (w *writer) Compact(ctx context.Context, p CompactPolicy) (CompactReport, error) {
	rep := CompactReport{ID: w.id, DryRun: p.DryRun}
	if p.KeepLast < 0 || p.KeepSince < 0 {
		return rep, fmt.Errorf("jsonlstore: compact %s: negative policy %+v", w.id, p)
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return rep, err
	}
	if err := w.fenceLocked(); err != nil {
		return rep, err
	}
	return w.s.compactLocked(ctx, w, p, rep)
}

// compactLocked runs under w.mu.
func (s *Store) compactLocked(ctx context.Context, w *writer, p CompactPolicy, rep CompactReport) (CompactReport, error) {
	id := w.id
	rep.Latest, rep.LogBytesBefore, rep.LogBytesAfter = w.rev, w.size, w.size
	v, err := openView(s.fs, logPath(id), s.opts.MaxRecordBytes)
	if err != nil {
		return rep, fmt.Errorf("jsonlstore: compact %s: %w", id, err)
	}
	defer v.Close()
	if v.id != w.logID || v.size != w.size {
		return rep, fmt.Errorf("jsonlstore: compact %s: log changed under its holder", id)
	}
	if !p.DryRun {
		rep.Reclaimed = s.reclaimArchive(id)
	}

	// The cut: keep a revision if either rule keeps it. KeepLast gives a
	// revision number; KeepSince the first record at or after a time,
	// found while streaming (record times never decrease).
	cutByCount := uint64(0)
	if p.KeepLast > 0 {
		cutByCount = 1
		if uint64(p.KeepLast) < w.rev {
			cutByCount = w.rev - uint64(p.KeepLast) + 1
		}
	}
	var since time.Time
	if p.KeepSince > 0 {
		since = s.opts.Now().Add(-p.KeepSince)
	}
	if cutByCount == 0 && since.IsZero() {
		rep.Skipped = "no policy"
		return rep, nil
	}
	keep := func(r *rawRecord) bool {
		return r.Rev >= w.rev || (cutByCount > 0 && r.Rev >= cutByCount) || (!since.IsZero() && !r.Time.Before(since))
	}

	// One pass: archive records until the first kept one.
	seg := archiveSegment{}
	var cutOffset int64 = -1
	var enc *segmentWriter
	defer func() {
		if enc != nil {
			enc.abort()
		}
	}()
	var prev *rawRecord
	err = v.scan(func(l *line) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.Rec == nil {
			return &sessionstore.CorruptionError{ID: id, Path: v.name, Offset: l.Offset, Err: fmt.Errorf("compaction met a bad record: %w", l.Err)}
		}
		r := l.Rec
		if prev != nil && r.Rev != prev.Rev+1 {
			return &sessionstore.CorruptionError{ID: id, Path: v.name, Offset: r.Offset, Revision: r.Rev, Err: errors.New("revision sequence broken")}
		}
		prev = &rawRecord{meta: r.meta}
		if keep(r) {
			cutOffset = r.Offset
			return errStop
		}
		if seg.First == 0 {
			seg.First = r.Rev
			if !p.DryRun {
				var err error
				if enc, err = s.newSegmentWriter(id); err != nil {
					return err
				}
			}
		}
		seg.Last = r.Rev
		seg.Records++
		seg.Bytes += r.LineLen
		if enc != nil {
			return enc.write(r, v)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return rep, fmt.Errorf("jsonlstore: compact %s: %w", id, err)
	}
	if seg.Records == 0 || cutOffset <= 0 {
		rep.Skipped = "nothing to trim"
		rep.FirstKept = firstRev(prev, seg)
		return rep, nil
	}
	rep.RevisionsTrimmed, rep.FirstKept = seg.Records, seg.Last+1
	rep.LogBytesAfter = w.size - cutOffset
	seg.File = segmentName(seg.First, seg.Last)
	rep.Segment = archiveDir(id) + "/" + seg.File
	if p.DryRun {
		return rep, nil
	}

	// Steps 1-2: finish, sync, verify and publish the segment.
	if err := enc.finish(&seg); err != nil {
		return rep, fmt.Errorf("jsonlstore: compact %s: write segment: %w", id, err)
	}
	if err := s.verifySegmentFile(id, enc.tmp, seg); err != nil {
		return rep, fmt.Errorf("jsonlstore: compact %s: verify segment: %w", id, err)
	}
	if err := s.fs.Rename(enc.tmp, rep.Segment); err != nil {
		return rep, fmt.Errorf("jsonlstore: compact %s: %w", id, err)
	}
	enc = nil
	if err := s.fs.SyncDir(archiveDir(id)); err != nil {
		return rep, fmt.Errorf("jsonlstore: compact %s: %w", id, err)
	}
	rep.ArchiveBytes = seg.ZstBytes

	// Step 3: the manifest.
	m, err := readManifest(s.fs, id)
	if err != nil {
		return rep, &sessionstore.CorruptionError{ID: id, Path: archiveDir(id) + "/" + manifestFile, Err: err}
	}
	kept := m.Segments[:0]
	for _, old := range m.Segments {
		if old.Last < seg.First {
			kept = append(kept, old)
		}
	}
	m.Segments = append(kept, seg)
	if err := s.writeManifest(id, m); err != nil {
		return rep, fmt.Errorf("jsonlstore: compact %s: manifest: %w", id, err)
	}

	// Step 4: the new log.
	if err := s.replaceLog(id, w, v, cutOffset); err != nil {
		return rep, err
	}
	w.writeSummaryAfterCompaction(v, cutOffset)
	s.opts.Logger.Info("jsonlstore: compacted", "session", id, "trimmed", seg.Records, "first_kept", rep.FirstKept, "archive_bytes", seg.ZstBytes)
	return rep, nil
}

func firstRev(prev *rawRecord, seg archiveSegment) uint64 {
	if seg.First != 0 {
		return seg.First
	}
	if prev != nil {
		return prev.Rev
	}
	return 0
}

// replaceLog writes the kept records [cut, size) of v into a new log and
// renames it over log.jsonl, then points w at it. Errors after the rename
// was attempted poison the writer: whether the new log is durable is then
// unknown.
func (s *Store) replaceLog(id session.SessionID, w *writer, v *view, cut int64) error {
	tmp := sessionDir(id) + "/." + LogFile + ".compact-" + randomSuffix() + tmpSuffix
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return fmt.Errorf("jsonlstore: compact %s: %w", id, err)
	}
	_, err = io.Copy(writerOnly{f}, io.NewSectionReader(v.f, cut, v.size-cut))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("jsonlstore: compact %s: write new log: %w", id, err)
	}
	if err := s.fs.Rename(tmp, logPath(id)); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("jsonlstore: compact %s: replace log: %w", id, err)
	}
	fail := func(err error) error {
		w.failed = err
		return fmt.Errorf("%w: session %s: compact: %w", sessionstore.ErrWriterFailed, id, err)
	}
	if err := s.fs.SyncDir(sessionDir(id)); err != nil {
		return fail(err)
	}
	nf, err := s.fs.OpenFile(logPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail(err)
	}
	fi, err := nf.Stat()
	if err != nil || fi.Size() != v.size-cut {
		nf.Close()
		return fail(fmt.Errorf("new log has an unexpected size"))
	}
	w.log.Close()
	w.log, w.logID = nf, vfs.IdentityOf(fi)
	w.size -= cut
	w.lastOffset -= cut
	return nil
}

// writerOnly hides a File's ReadFrom-less methods from io.Copy.
type writerOnly struct{ io.Writer }

// writeSummaryAfterCompaction refreshes summary.json for the new log (its
// identity changed, so the old summary no longer matches).
func (w *writer) writeSummaryAfterCompaction(v *view, cut int64) {
	last, _, err := v.last()
	if err != nil || last == nil {
		return
	}
	rec, err := decodeRecord(w.id, v, last)
	if err != nil {
		return
	}
	moved := *last
	moved.Offset -= cut
	w.writeSummary(&moved, &rec.Snapshot)
}

// reclaimArchive removes what crashed compactions left: segments the
// manifest lists that reach into the log (the log is authoritative for
// them), segment files the manifest does not list, and temporary files.
// It runs under the lease and reports what it removed.
func (s *Store) reclaimArchive(id session.SessionID) []string {
	entries, err := s.fs.ReadDir(archiveDir(id))
	if err != nil {
		return nil
	}
	m, err := readManifest(s.fs, id)
	if err != nil {
		return nil // a damaged manifest is for verify and repair, not for guessing
	}
	logFirst, err := s.logFirstRev(id)
	if err != nil {
		return nil
	}
	listed := map[string]bool{}
	var keep []archiveSegment
	for _, seg := range m.Segments {
		if seg.Last < logFirst {
			listed[seg.File] = true
			keep = append(keep, seg)
		}
	}
	var removed []string
	if len(keep) != len(m.Segments) {
		m.Segments = keep
		if s.writeManifest(id, m) != nil {
			return nil
		}
	}
	for _, e := range entries {
		name := e.Name()
		if name == manifestFile || listed[name] {
			continue
		}
		p := archiveDir(id) + "/" + name
		if s.fs.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	if len(removed) > 0 {
		_ = s.fs.SyncDir(archiveDir(id))
	}
	return removed
}

// logFirstRev reads the revision of the log's first record.
func (s *Store) logFirstRev(id session.SessionID) (uint64, error) {
	v, err := openView(s.fs, logPath(id), s.opts.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	defer v.Close()
	return firstRevOf(v)
}

// segmentWriter streams record lines into a temporary zstd file.
type segmentWriter struct {
	s    *Store
	f    vfs.File
	tmp  string
	zw   *zstd.Encoder
	cw   *countingWriter
	hash uint32
	buf  []byte
}

func (s *Store) newSegmentWriter(id session.SessionID) (*segmentWriter, error) {
	if err := s.ensureArchiveDir(id); err != nil {
		return nil, err
	}
	tmp := archiveDir(id) + "/.segment-" + randomSuffix() + tmpSuffix
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return nil, err
	}
	cw := &countingWriter{w: f}
	zw, err := zstd.NewWriter(cw, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(archiveWindow),
		zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	if err != nil {
		f.Close()
		_ = s.fs.Remove(tmp)
		return nil, err
	}
	return &segmentWriter{s: s, f: f, tmp: tmp, zw: zw, cw: cw}, nil
}

// write appends one record's whole line, read again from the view (the
// scan's buffer holds the line without its newline).
func (sw *segmentWriter) write(r *rawRecord, v *view) error {
	if cap(sw.buf) < int(r.LineLen) {
		sw.buf = make([]byte, r.LineLen)
	}
	b := sw.buf[:r.LineLen]
	if _, err := v.f.ReadAt(b, r.Offset); err != nil {
		return readErr(err)
	}
	if b[len(b)-1] != '\n' {
		return errViewChanged
	}
	sw.hash = crc32.Update(sw.hash, castagnoli, b)
	_, err := sw.zw.Write(b)
	return err
}

func (sw *segmentWriter) finish(seg *archiveSegment) error {
	if err := sw.zw.Close(); err != nil {
		return err
	}
	seg.CRC = fmt.Sprintf("%08x", sw.hash)
	seg.ZstBytes = sw.cw.n
	err := sw.f.Sync()
	if cerr := sw.f.Close(); err == nil {
		err = cerr
	}
	sw.f = nil
	return err
}

func (sw *segmentWriter) abort() {
	if sw.f != nil {
		sw.zw.Close()
		sw.f.Close()
	}
	_ = sw.s.fs.Remove(sw.tmp)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// verifySegmentFile decompresses a written segment and checks every line,
// the revision range, the size and the checksum before it is published.
func (s *Store) verifySegmentFile(id session.SessionID, name string, seg archiveSegment) error {
	saved := seg.File
	seg.File = name[len(archiveDir(id))+1:]
	next := seg.First
	err := s.scanSegment(id, seg, func(l *line) error {
		if l.Rec == nil || l.Rec.Rev != next {
			return fmt.Errorf("segment line at %d does not read back as revision %d", l.Offset, next)
		}
		next++
		return nil
	})
	seg.File = saved
	if err == nil && next != seg.Last+1 {
		err = fmt.Errorf("segment reads back %d records, wrote %d", next-seg.First, seg.Records)
	}
	return err
}

// Compact compacts session id by policy, standalone: it takes the lease —
// skipping a held session when wait is 0, else waiting up to wait — and
// releases it after. A skipped session is reported with Skipped set and a
// nil error.
func (s *Store) Compact(ctx context.Context, id session.SessionID, p CompactPolicy, wait time.Duration) (CompactReport, error) {
	rep := CompactReport{ID: id, DryRun: p.DryRun}
	var w sessionstore.Writer
	var err error
	if wait <= 0 {
		w, err = s.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "compact"})
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		w, err = s.Acquire(wctx, id, sessionstore.AcquireOptions{Label: "compact"})
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			st, _ := s.Lease(ctx, id)
			err = &sessionstore.LeaseHeldError{ID: id, Status: st}
		}
	}
	var held *sessionstore.LeaseHeldError
	if errors.As(err, &held) {
		rep.Skipped = held.Error()
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	defer w.Release(context.WithoutCancel(ctx))
	return w.(*writer).Compact(ctx, p)
}
