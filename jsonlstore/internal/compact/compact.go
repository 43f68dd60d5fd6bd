package compact

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Holder is the writer of the session being compacted, as compaction
// needs it: the facade's writer implements it. Its mutex is held, and its
// lease fenced, for the whole of Run, so appends wait and nothing else
// changes the log.
type Holder interface {
	// Log describes the log as the holder last left it: the identity of
	// the file it appends to, its size and the latest revision.
	Log() (id vfs.Identity, size int64, rev uint64)
	// Replaced points the holder at the new log f (opened write-only,
	// O_APPEND, already synced and renamed into place), of identity id,
	// which is cut bytes shorter at its start; the holder closes the
	// file it appended to before.
	Replaced(f vfs.File, id vfs.Identity, cut int64)
	// Fail poisons the holder with err: the log was being replaced, and
	// whether the new one is durable is unknown.
	Fail(err error)
	// WriteSummary refreshes summary.json for the new log, whose last
	// record is last and its projection sum; a failure leaves a stale
	// cache, which readers ignore.
	WriteSummary(last *record.Rec, sum summary.Summary)
	// CollectBlobs removes the session's blobs no record references (the
	// offline tools' blob collection, which the facade calls).
	CollectBlobs(ctx context.Context) (maintenance.BlobCollection, error)
}

// Validate refuses a policy no caller can mean.
func Validate(p maintenance.CompactPolicy) error {
	if p.KeepLast < 0 || p.KeepSince < 0 {
		return layout.OpErr("compact", "", fmt.Errorf("negative policy %+v", p))
	}
	return nil
}

// Run compacts session id by policy p under h, its writer (whose mutex
// the caller holds, and whose lease it has fenced), filling in rep. An
// error before the log is replaced leaves the session as it was; an I/O
// error while it is being replaced fails h.
func Run(ctx context.Context, root *layout.Root, id session.SessionID, h Holder, p maintenance.CompactPolicy, rep maintenance.CompactReport) (maintenance.CompactReport, error) {
	fsys := root.FS
	v, err := logfile.Open(fsys, id, root.MaxRecordBytes)
	if err != nil {
		return rep, layout.OpErr("compact", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	logID, size, latest := h.Log()
	if v.ID != logID || v.Size != size {
		return rep, layout.OpErr("compact", id, errors.New("log changed under its holder"))
	}
	// Step 0: the manifest, and what crashed compactions left.
	m, err := archive.ReadManifest(fsys, id)
	if err != nil {
		return rep, archive.Corruption(id, archive.ManifestFile, 0, err)
	}
	left, err := Leftovers(fsys, id, v, m)
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
	pl, err := planCut(ctx, root, v, latest, p, func(r *record.Rec) error {
		if p.DryRun {
			return nil
		}
		if enc == nil {
			var err error
			if enc, err = archive.NewWriter(fsys, id); err != nil {
				return err
			}
		}
		return enc.Write(r, v.F)
	})
	if err != nil {
		return rep, layout.OpErr("compact", id, err)
	}
	rep = pl.report(rep, size)
	switch {
	case p.DryRun:
		rep.Reclaimed = left.Paths(id)
		return rep, nil
	case rep.Skipped != "":
		rep.Reclaimed, err = archive.Reclaim(fsys, id, m, left)
		if err != nil {
			return rep, layout.OpErr("compact", id, fmt.Errorf("reclaim: %w", err))
		}
		return rep, nil
	}
	seg := pl.seg

	// Step 2: remove the leftovers (before the new segment takes a name
	// one of them may have), finish, sync and verify the segment, and
	// give it its name.
	rep.Reclaimed = archive.RemoveLeftovers(fsys, id, left)
	if err := enc.Finish(&seg); err != nil {
		return rep, layout.OpErr("compact", id, fmt.Errorf("write segment: %w", err))
	}
	if err := archive.VerifySegment(fsys, enc.Tmp(), seg); err != nil {
		return rep, layout.OpErr("compact", id, fmt.Errorf("verify segment: %w", err))
	}
	if err := fsys.Rename(enc.Tmp(), rep.Segment); err != nil {
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
	if err := archive.WriteManifest(fsys, id, m); err != nil {
		return rep, layout.OpErr("compact", id, fmt.Errorf("manifest: %w", err))
	}

	// Step 4: the new log.
	if err := replaceLog(fsys, id, h, v, pl.cut); err != nil {
		return rep, err
	}
	writeSummary(fsys, id, h, v, pl.cut)
	// The blobs no record references; a failure to read every reference
	// removes nothing and does not undo the compaction.
	if rep.Blobs, err = h.CollectBlobs(ctx); err != nil {
		root.Logger.Warn("jsonlstore: compaction left unreferenced blobs", "session", id, "err", err)
	}
	root.Logger.Info("jsonlstore: compacted", "session", id, "trimmed", seg.Records, "first_kept", rep.FirstKept, "archive_bytes", seg.ZstBytes)
	return rep, nil
}

// writeSummary refreshes summary.json for the new log (its identity
// changed, so the old summary no longer matches).
func writeSummary(fsys vfs.FS, id session.SessionID, h Holder, v *logfile.View, cut int64) {
	last, sum, err := logfile.LatestSummary(fsys, id, v)
	if err != nil {
		return
	}
	moved := *last
	moved.Offset -= cut
	h.WriteSummary(&moved, sum)
}

// DryRun reports what a compaction of session id by policy p would do
// now, as a reader sees the log: it takes no lease and writes nothing.
// The caller has checked the store and id, and that the session is not
// held when it must not wait.
func DryRun(ctx context.Context, root *layout.Root, id session.SessionID, p maintenance.CompactPolicy, rep maintenance.CompactReport) (maintenance.CompactReport, error) {
	base := rep
	err := logfile.Read(ctx, root, id, func(v *logfile.View) error {
		last, _, err := logfile.Latest(root.FS, id, v)
		if err != nil {
			return err
		}
		m, err := archive.ReadManifest(root.FS, id)
		if err != nil {
			return archive.Corruption(id, archive.ManifestFile, 0, err)
		}
		left, err := Leftovers(root.FS, id, v, m)
		if err != nil {
			return err
		}
		pl, err := planCut(ctx, root, v, last.Rev, p, func(*record.Rec) error { return nil })
		if err != nil {
			return err
		}
		rep = pl.report(base, last.End())
		rep.Reclaimed = left.Paths(id)
		return nil
	})
	return rep, err
}

// Leftovers lists what crashed compactions left in the archive of the
// session whose current log v views, per its manifest m.
func Leftovers(fsys vfs.FS, id session.SessionID, v *logfile.View, m archive.Manifest) (archive.Leftovers, error) {
	first, ok := logfile.FirstRev(v)
	if !ok {
		return archive.Leftovers{}, errors.New("the log's first record is unreadable")
	}
	return archive.FindLeftovers(fsys, id, first, m)
}
