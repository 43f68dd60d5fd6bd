package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Compaction trims a session's old revisions into a zstd archive segment
// and replaces the log with one that starts at the first kept revision.
// It runs under the session's lease. The steps, and what a crash after
// each leaves:
//
//  0. Read the manifest and note what crashed compactions left in
//     archive/ (segments the manifest does not list, listed segments that
//     reach into the log, temporary files).
//  1. Stream the trimmed records' lines (verified) into
//     archive/.segment-*.tmp through zstd; fsync. Crash: a temp file,
//     ignored and reclaimed.
//  2. Remove the leftovers of step 0 (not synced: a removal that does not
//     survive a crash leaves a leftover to reclaim again). Verify the temp
//     segment by decompressing it; rename it to its final name. Crash: a
//     segment the manifest does not list, ignored and reclaimed.
//  3. Write the manifest listing the segment (and no longer listing the
//     leftovers): temp, fsync, rename, fsync archive/. That one directory
//     sync also makes the segment's name (and the removals) durable, before
//     the log can be replaced. Crash: a listed segment that overlaps the
//     log, which is still authoritative for those revisions: readers
//     ignore the segment, the next compaction reclaims it.
//  4. Copy the kept records byte for byte into .log.jsonl.compact-*.tmp,
//     fsync, rename over log.jsonl, fsync the session directory. Crash
//     before the rename is durable: the old log (all revisions) and an
//     overlapping segment; after: the new log and the segment, together
//     holding every revision exactly once.
//
// The session directory's sync in step 4 also makes archive/ itself
// durable when the first compaction created it (its creation is synced at
// once, too, so that an unkind crash cannot keep the new log and lose the
// directory). When nothing is trimmed, the leftovers are reclaimed
// durably: the files removed, then the manifest rewritten (temp, fsync,
// rename, fsync archive/) or, when it lists none of them, archive/ synced.
//
// Every sync above is needed: TestCompactSyncMutation silences each in
// turn and finds a crash that loses or resurrects something.
//
// Revision numbers never change, and every byte of every record is kept.
//
// This file is longer than the house limit because it holds the whole
// algorithm — policy, plan, leftovers, segment writer, log replacement,
// and the standalone and dry-run entry points — whose steps and crash
// analysis above only make sense read together.

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
	Skipped string `json:"skipped,omitempty"`
	DryRun  bool   `json:"dry_run,omitempty"`
	// RevisionsTrimmed counts the revisions moved into the archive, from
	// its first to FirstKept-1: those a gap record stands for included
	// (it is archived as they are missing: one record).
	RevisionsTrimmed int64  `json:"revisions_trimmed"`
	FirstKept        uint64 `json:"first_kept"`
	Latest           uint64 `json:"latest"`
	LogBytesBefore   int64  `json:"log_bytes_before"`
	LogBytesAfter    int64  `json:"log_bytes_after"`
	// ArchiveBytes is the new segment's compressed size; Segment its path.
	ArchiveBytes int64  `json:"archive_bytes"`
	Segment      string `json:"segment,omitempty"`
	// Reclaimed lists stale files removed (for a dry run: that would be):
	// segments crashed compactions left unlisted or overlapping the log,
	// temporary files.
	Reclaimed []string `json:"reclaimed,omitempty"`
	// Blobs is what the compaction's blob collection removed: blobs no
	// record references (a compaction that trims collects them).
	Blobs BlobCollection `json:"blobs,omitzero"`
}

// Compactor is implemented by the writers of a jsonlstore.Store: a holder
// can compact its own session without releasing its lease.
type Compactor interface {
	Compact(ctx context.Context, p CompactPolicy) (CompactReport, error)
}

var _ Compactor = (*writer)(nil)

// validate refuses a policy no caller can mean.
func (p CompactPolicy) validate() error {
	if p.KeepLast < 0 || p.KeepSince < 0 {
		return layout.OpErr("compact", "", fmt.Errorf("negative policy %+v", p))
	}
	return nil
}

// Compact trims the session by policy, under this writer's lease. Appends
// wait while it runs. An error before the log is replaced leaves the
// session as it was (the writer stays usable); an I/O error while the log
// is being replaced poisons the writer, as an append's would. A dry run
// writes nothing.
func (w *writer) Compact(ctx context.Context, p CompactPolicy) (CompactReport, error) {
	rep := CompactReport{ID: w.id, DryRun: p.DryRun}
	if err := p.validate(); err != nil {
		return rep, err
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return rep, err
	}
	if _, err := w.fenceLocked(); err != nil {
		return rep, err
	}
	if !p.DryRun {
		w.ensureMarkLocked() // the catalog knows the log may change
	}
	return w.s.compactLocked(ctx, w, p, rep)
}

// compactLocked runs under w.mu.
func (s *Store) compactLocked(ctx context.Context, w *writer, p CompactPolicy, rep CompactReport) (CompactReport, error) {
	id := w.id
	v, err := logfile.Open(s.fs, id, s.opts.MaxRecordBytes)
	if err != nil {
		return rep, layout.OpErr("compact", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	if v.ID != w.logID || v.Size != w.size {
		return rep, layout.OpErr("compact", id, errors.New("log changed under its holder"))
	}
	// Step 0: the manifest, and what crashed compactions left.
	m, err := archive.ReadManifest(s.fs, id)
	if err != nil {
		return rep, archive.Corruption(id, archive.ManifestFile, 0, err)
	}
	left, err := s.leftovers(id, v, m)
	if err != nil {
		return rep, layout.OpErr("compact", id, err)
	}

	// Step 1, while finding the cut: stream the trimmed records into a
	// temporary segment.
	var enc *archive.Writer
	defer func() {
		if enc != nil {
			enc.Abort()
		}
	}()
	pl, err := s.planCompaction(ctx, id, v, w.rev, p, func(r *record.Rec) error {
		if p.DryRun {
			return nil
		}
		if enc == nil {
			var err error
			if enc, err = archive.NewWriter(s.fs, id); err != nil {
				return err
			}
		}
		return enc.Write(r, v.F)
	})
	if err != nil {
		return rep, layout.OpErr("compact", id, err)
	}
	rep = pl.report(rep, w.size)
	switch {
	case p.DryRun:
		rep.Reclaimed = left.Paths(id)
		return rep, nil
	case rep.Skipped != "":
		rep.Reclaimed, err = archive.Reclaim(s.fs, id, m, left)
		if err != nil {
			return rep, layout.OpErr("compact", id, fmt.Errorf("reclaim: %w", err))
		}
		return rep, nil
	}
	seg := pl.seg

	// Step 2: remove the leftovers (before the new segment takes a name
	// one of them may have), finish, sync and verify the segment, and
	// give it its name.
	rep.Reclaimed = archive.RemoveLeftovers(s.fs, id, left)
	if err := enc.Finish(&seg); err != nil {
		return rep, layout.OpErr("compact", id, fmt.Errorf("write segment: %w", err))
	}
	if err := archive.VerifySegment(s.fs, enc.Tmp(), seg); err != nil {
		return rep, layout.OpErr("compact", id, fmt.Errorf("verify segment: %w", err))
	}
	if err := s.fs.Rename(enc.Tmp(), rep.Segment); err != nil {
		return rep, layout.OpErr("compact", id, err)
	}
	enc = nil
	rep.ArchiveBytes = seg.ZstBytes

	// Step 3: the manifest. Its directory sync also makes the segment's
	// name durable (there is no need to sync archive/ after the rename
	// above: until the log is replaced, the log is authoritative and a
	// segment lost in a crash is not missed).
	kept := m.Segments[:0:0]
	for _, old := range m.Segments {
		if old.Last < seg.First {
			kept = append(kept, old)
		}
	}
	m.Segments = append(kept, seg)
	if err := archive.WriteManifest(s.fs, id, m); err != nil {
		return rep, layout.OpErr("compact", id, fmt.Errorf("manifest: %w", err))
	}

	// Step 4: the new log.
	if err := s.replaceLog(id, w, v, pl.cut); err != nil {
		return rep, err
	}
	w.writeSummaryAfterCompaction(v, pl.cut)
	// The blobs no record references (collectBlobs); a failure to read
	// every reference removes nothing and does not undo the compaction.
	if rep.Blobs, err = s.collectBlobs(ctx, w); err != nil {
		s.opts.Logger.Warn("jsonlstore: compaction left unreferenced blobs", "session", id, "err", err)
	}
	s.opts.Logger.Info("jsonlstore: compacted", "session", id, "trimmed", seg.Records, "first_kept", rep.FirstKept, "archive_bytes", seg.ZstBytes)
	return rep, nil
}

// compactPlan is where a compaction cuts a log.
type compactPlan struct {
	skipped   string          // why nothing is trimmed ("" when something is)
	seg       archive.Segment // the trimmed records (File set when any)
	cut       int64           // offset of the first kept record
	firstKept uint64
	latest    uint64
}

// report fills in rep for a log of size bytes.
func (pl compactPlan) report(rep CompactReport, size int64) CompactReport {
	rep.Skipped, rep.FirstKept, rep.Latest = pl.skipped, pl.firstKept, pl.latest
	rep.LogBytesBefore, rep.LogBytesAfter = size, size
	if pl.skipped == "" {
		rep.RevisionsTrimmed = int64(pl.seg.Last - pl.seg.First + 1) //nolint:gosec // G115: a revision range, far below 2^63
		rep.LogBytesAfter = size - pl.cut
		rep.Segment = archive.Dir(rep.ID) + "/" + pl.seg.File
	}
	return rep
}

// planCompaction reads v, whose latest revision is latest, forwards until
// the first revision p keeps — or, when that is a delta record, the full
// record its chain starts at — calling trim for each record before it
// (without its payload: trim reads the line from v). It checks every
// record and the sequence on the way.
func (s *Store) planCompaction(ctx context.Context, id session.SessionID, v *logfile.View, latest uint64, p CompactPolicy, trim func(r *record.Rec) error) (compactPlan, error) {
	pl := compactPlan{latest: latest, cut: -1}
	// The cut: keep a revision if either rule keeps it. KeepLast gives a
	// revision number; KeepSince the first record at or after a time,
	// found while streaming (record times never decrease).
	cutByCount := uint64(0)
	if p.KeepLast > 0 {
		cutByCount = 1
		if uint64(p.KeepLast) < latest {
			cutByCount = latest - uint64(p.KeepLast) + 1
		}
	}
	var since time.Time
	if p.KeepSince > 0 {
		since = s.opts.Now().Add(-p.KeepSince)
	}
	if cutByCount == 0 && since.IsZero() {
		pl.skipped = "no policy"
		return pl, nil
	}
	// A record stands for revisions Rev to Through(): a gap record for
	// all those a repair set aside. It is kept when any of them is, and
	// a segment ends at the last revision its last record stands for
	// (the manifest's ranges are revisions, not records).
	keep := func(r *record.Rec) bool {
		return r.Through() >= latest || (cutByCount > 0 && r.Through() >= cutByCount) || (!since.IsZero() && !r.Time.Before(since))
	}
	seg := &pl.seg
	// The first kept record must be a full record (or a gap): a delta
	// needs its base in the log. Records since the last full one wait in
	// pending until the next full record (or gap) shows that nothing kept
	// needs them; when the cut lands on a delta, they are kept with it.
	var pending []record.Rec
	trimPending := func() error {
		for i := range pending {
			r := &pending[i]
			if seg.First == 0 {
				seg.First = r.Rev
			}
			seg.Last = r.Through()
			seg.Records++
			seg.Bytes += r.LineLen
			if err := trim(r); err != nil {
				return err
			}
		}
		pending = pending[:0]
		return nil
	}
	rd := v.Reader(record.Resumed())
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return pl, err
		}
		r := rd.Record()
		if r.Kind == record.KindFull || r.Kind == record.KindGap {
			// Nothing from here on builds on the records before: a gap
			// is followed by a full record.
			if err := trimPending(); err != nil {
				return pl, err
			}
		}
		if keep(r) {
			pl.cut, pl.firstKept = r.Offset, r.Rev
			if len(pending) > 0 {
				pl.cut, pl.firstKept = pending[0].Offset, pending[0].Rev
			}
			break
		}
		pending = append(pending, record.Rec{Meta: r.Meta, Path: r.Path, Offset: r.Offset, LineLen: r.LineLen})
	}
	if err := rd.Err(); err != nil {
		return pl, fmt.Errorf("compaction met a bad record: %w", err)
	}
	if pl.cut < 0 {
		// The scan ended before the latest revision: the log is not what
		// its holder (or Load) said.
		return pl, record.ErrShrunk
	}
	if seg.Records == 0 {
		pl.skipped = "nothing to trim"
		return pl, nil
	}
	seg.File = archive.SegmentName(seg.First, seg.Last)
	return pl, nil
}

// replaceLog writes the kept records [cut, size) of v into a new log and
// renames it over log.jsonl, then points w at it. Errors after the rename
// was attempted poison the writer: whether the new log is durable is then
// unknown.
func (s *Store) replaceLog(id session.SessionID, w *writer, v *logfile.View, cut int64) error {
	if _, err := s.writeLog(id, "compact", func(out io.Writer) error {
		_, err := io.Copy(out, io.NewSectionReader(v.F, cut, v.Size-cut))
		return err
	}); err != nil {
		return layout.OpErr("compact", id, err)
	}
	fail := func(err error) error {
		w.failed = err
		return layout.OpErr("compact", id, fmt.Errorf("%w: %w", sessionstore.ErrWriterFailed, err))
	}
	if err := s.fs.SyncDir(layout.SessionDir(id)); err != nil {
		return fail(err)
	}
	nf, err := s.fs.OpenFile(layout.LogPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail(err)
	}
	fi, err := nf.Stat()
	if err != nil || fi.Size() != v.Size-cut {
		_ = nf.Close()
		return fail(fmt.Errorf("new log has an unexpected size"))
	}
	_ = w.log.Close() // the replaced log: synced, and superseded by nf
	w.log, w.logID = nf, vfs.IdentityOf(fi)
	w.size -= cut
	w.lastOffset -= cut
	return nil
}

// writerOnly hides a File's ReadFrom-less methods from io.Copy.
type writerOnly struct{ io.Writer }

// writeSummaryAfterCompaction refreshes summary.json for the new log (its
// identity changed, so the old summary no longer matches).
func (w *writer) writeSummaryAfterCompaction(v *logfile.View, cut int64) {
	last, sum, err := logfile.LatestSummary(w.s.fs, w.id, v)
	if err != nil {
		return
	}
	moved := *last
	moved.Offset -= cut
	w.writeSummaryOf(&moved, sum, w.logStatAt(&moved))
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
func (s *Store) Compact(ctx context.Context, id session.SessionID, p CompactPolicy, wait time.Duration) (CompactReport, error) {
	rep := CompactReport{ID: id, DryRun: p.DryRun}
	if err := p.validate(); err != nil {
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
func (s *Store) compactDryRun(ctx context.Context, id session.SessionID, p CompactPolicy, wait time.Duration, rep CompactReport) (CompactReport, error) {
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
	base := rep
	err := s.read(ctx, id, func(v *logfile.View) error {
		last, _, err := logfile.Latest(s.fs, id, v)
		if err != nil {
			return err
		}
		m, err := archive.ReadManifest(s.fs, id)
		if err != nil {
			return archive.Corruption(id, archive.ManifestFile, 0, err)
		}
		left, err := s.leftovers(id, v, m)
		if err != nil {
			return err
		}
		pl, err := s.planCompaction(ctx, id, v, last.Rev, p, func(*record.Rec) error { return nil })
		if err != nil {
			return err
		}
		rep = pl.report(base, last.End())
		rep.Reclaimed = left.Paths(id)
		return nil
	})
	return rep, err
}

// leftovers lists what crashed compactions left in the archive of the
// session whose current log v views, per its manifest m.
func (s *Store) leftovers(id session.SessionID, v *logfile.View, m archive.Manifest) (archive.Leftovers, error) {
	first, ok := logfile.FirstRev(v)
	if !ok {
		return archive.Leftovers{}, errors.New("the log's first record is unreadable")
	}
	return archive.FindLeftovers(s.fs, id, first, m)
}
