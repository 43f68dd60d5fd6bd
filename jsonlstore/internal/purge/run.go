package purge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/compact"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// Holder is the writer of the session being redacted, as redaction needs
// it: the facade's writer implements it. Its mutex is held, and its lease
// fenced, for the whole of Run. After Run the writer's memory of the log
// (its file, its chain, its last snapshot) is the old history's: the
// caller must not let it append again.
type Holder interface {
	// Log describes the log as the holder last left it: the identity of
	// the file it appends to, its size and the latest revision.
	Log() (id vfs.Identity, size int64, rev uint64)
	// CollectBlobs removes the session's blobs no record references (the
	// offline tools' blob collection, which the facade calls).
	CollectBlobs(ctx context.Context) (maintenance.BlobCollection, error)
}

// errNothing ends the writing of a new log that would equal the old one.
var errNothing = errors.New("nothing to redact")

// Run redacts session id's whole history with r under h, filling in rep
// (package doc: the steps and what a crash leaves).
func Run(ctx context.Context, root *layout.Root, id session.SessionID, h Holder, r *redact.Redactor, rep maintenance.RedactReport) (maintenance.RedactReport, error) {
	fsys := root.FS
	if r.Off() {
		return rep, layout.OpErr("redact", id, errors.New("no redaction rule is on"))
	}
	v, err := logfile.Open(fsys, id, root.MaxRecordBytes)
	if err != nil {
		return rep, layout.OpErr("redact", id, err)
	}
	logID, size, _ := h.Log()
	if v.ID != logID || v.Size != size {
		_ = v.Close()
		return rep, layout.OpErr("redact", id, errors.New("log changed under its holder"))
	}
	m, err := archive.ReadManifest(fsys, id)
	if err != nil {
		_ = v.Close()
		return rep, archive.Corruption(id, archive.ManifestFile, 0, err)
	}
	archived := len(m.Segments) > 0
	if first, ok := logfile.FirstRev(v); ok && first == 1 {
		archived = false // the segments are leftovers, ignored
	}

	// Steps 1 and 2: the new history, and the switch.
	bw := blobfile.NewWriter(fsys, layout.SessionDir(id), root.BlobThreshold)
	t := newTransform(fsys, id, r, bw)
	_, err = compact.PublishLog(fsys, id, "redact", func(out io.Writer) error {
		return t.history(ctx, v, out, &rep)
	})
	_ = v.Close() // read-only
	switch {
	case errors.Is(err, errNothing):
		rep.Rewritten = 0
	case err != nil:
		return rep, layout.OpErr("redact", id, err)
	default:
		rep.Purged = append(rep.Purged, layout.LogPath(id))
		rep.Unarchived = archived
	}
	rep.Blobs = t.newBlobs
	if len(t.secrets) > 0 {
		rep.Secrets = t.secrets
	}

	// Step 3: the old copies.
	if err := reclaimArchive(fsys, root, id, &rep); err != nil {
		return rep, err
	}
	if err := removeSummary(fsys, id, r, rep.Rewritten > 0, &rep); err != nil {
		return rep, err
	}
	if err := t.forensics(&rep); err != nil {
		return rep, err
	}
	rep.Blobs = t.newBlobs
	c, err := h.CollectBlobs(ctx)
	if err != nil {
		return rep, layout.OpErr("redact", id, fmt.Errorf("collect the old blobs: %w", err))
	}
	if c.Kept != "" {
		rep.NotPurged = append(rep.NotPurged, "old blobs of "+string(id)+": "+c.Kept)
	} else if c.Blobs > 0 {
		rep.Purged = append(rep.Purged, fmt.Sprintf("%s (%d blobs)", blobfile.Dir(id), c.Blobs))
	}
	root.Logger.Info("jsonlstore: redacted", "session", id, "rewritten", rep.Rewritten, "revisions", rep.Revisions)
	return rep, nil
}

// history writes the redacted history of the log v views (and of its
// archives) to out: every revision, with its number, generation, time
// and kind. It returns errNothing when no revision changes, after
// syncing the new blobs otherwise.
func (t *transform) history(ctx context.Context, v *logfile.View, out io.Writer, rep *maintenance.RedactReport) error {
	sc := logfile.NewScan(t.fs, t.id, v)
	defer sc.Close()
	snaps := record.NewSnapshots(t.id, v.MaxPayload)
	var prevOld, prevNew []byte // the previous revision's stored snapshot, as it was and redacted
	rep.Revisions, rep.Rewritten = 0, 0
	for sc.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec := sc.Record()
		rep.Revisions += int64(rec.Through() - rec.Rev + 1) //nolint:gosec // G115: a revision range, far below 2^63
		if rec.Kind == record.KindGap {
			prevOld, prevNew = nil, nil
			if _, err := out.Write(rec.Line()); err != nil {
				return err
			}
			continue
		}
		if err := snaps.Add(rec); err != nil {
			return err
		}
		snap := snaps.Bytes()
		red, err := t.snapshot(snap)
		if err != nil {
			return &sessionstore.CorruptionError{ID: t.id, Path: rec.Path, Offset: rec.Offset, Revision: rec.Rev, Err: err}
		}
		baseSame := rec.Kind == record.KindFull || bytes.Equal(prevOld, prevNew)
		line := rec.Line()
		if !baseSame || !bytes.Equal(red, snap) {
			line = t.encode(rec, prevNew, red)
			rep.Rewritten++
		}
		if _, err := out.Write(line); err != nil {
			return err
		}
		prevOld, prevNew = snap, red
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if rep.Rewritten == 0 {
		return errNothing
	}
	return t.blobs.Sync()
}

// encode is the record of rec's revision whose stored snapshot is red,
// the revision before's being base: of rec's kind (a delta from base, or
// a full record when that delta would not be smaller).
func (t *transform) encode(rec *record.Rec, base, red []byte) []byte {
	m := rec.Meta
	payload := red
	if m.Kind == record.KindDelta {
		if d, ok := record.Diff(base, red); ok {
			payload = d
		} else {
			m.Kind = record.KindFull
		}
	}
	m.Version = max(record.VersionOf(m.Kind), min(m.Version, record.Version4))
	if bytes.Contains(payload, []byte(`"sha256":"`)) {
		m.Version = record.Version4
	}
	return record.Encode(m, payload)
}

// reclaimArchive removes the segments the new log overlaps (compaction's
// leftovers) durably.
func reclaimArchive(fsys vfs.FS, root *layout.Root, id session.SessionID, rep *maintenance.RedactReport) error {
	v, err := logfile.Open(fsys, id, root.MaxRecordBytes)
	if err != nil {
		return layout.OpErr("redact", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	m, err := archive.ReadManifest(fsys, id)
	if err != nil {
		return archive.Corruption(id, archive.ManifestFile, 0, err)
	}
	left, err := compact.Leftovers(fsys, id, v, m)
	if err != nil {
		return layout.OpErr("redact", id, err)
	}
	removed, err := archive.Reclaim(fsys, id, m, left)
	rep.Purged = append(rep.Purged, removed...)
	if err != nil {
		return layout.OpErr("redact", id, fmt.Errorf("reclaim the old archive: %w", err))
	}
	return nil
}

// removeSummary removes summary.json when the log was rewritten (it
// describes the old one) or it holds a secret, durably.
func removeSummary(fsys vfs.FS, id session.SessionID, r *redact.Redactor, rewritten bool, rep *maintenance.RedactReport) error {
	p := layout.SessionDir(id) + "/" + layout.SummaryFile
	if !rewritten {
		b, err := vfs.ReadFile(fsys, p, 1<<20)
		if err != nil {
			return nil //nolint:nilerr // none to remove (or unreadable: a cache, left alone)
		}
		if _, n := r.Bytes(b); n == 0 {
			return nil
		}
	}
	if err := fsys.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return layout.OpErr("redact", id, err)
	}
	rep.Purged = append(rep.Purged, p)
	return fsys.SyncDir(layout.SessionDir(id))
}

// forensics rewrites each forensic copy that holds a secret, or a
// reference to a blob or page redaction replaced: a temporary file in
// the session directory (a holder's sweep removes it if a crash leaves
// it), synced, renamed over the copy; forensic/ is synced once after.
func (t *transform) forensics(rep *maintenance.RedactReport) error {
	dir := layout.SessionDir(t.id) + "/" + layout.ForensicDir
	entries, err := t.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return layout.OpErr("redact", t.id, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	changed := false
	for _, name := range names {
		p := dir + "/" + name
		b, err := vfs.ReadFile(t.fs, p, 1<<31)
		if err != nil {
			return layout.OpErr("redact", t.id, err)
		}
		nb, n, err := t.forensic(b)
		if err != nil {
			return layout.OpErr("redact", t.id, err)
		}
		if n == 0 {
			continue
		}
		// The blobs the copy now references are durable before it is.
		if err := t.blobs.Sync(); err != nil {
			return layout.OpErr("redact", t.id, err)
		}
		if err := t.replace(p, nb); err != nil {
			return layout.OpErr("redact", t.id, err)
		}
		rep.Purged = append(rep.Purged, p)
		changed = true
	}
	if !changed {
		return nil
	}
	return t.fs.SyncDir(dir)
}

// replace writes b over the file p: temporary file, sync, rename.
func (t *transform) replace(p string, b []byte) error {
	tmp := layout.SessionDir(t.id) + "/.forensic.redact-" + layout.RandomSuffix() + layout.TmpSuffix
	f, err := t.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = t.fs.Rename(tmp, p)
	}
	if err != nil {
		_ = t.fs.Remove(tmp)
	}
	return err
}
