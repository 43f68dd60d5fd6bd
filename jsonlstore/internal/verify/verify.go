package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/compact"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/usage"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Checker checks the sessions of one store: its root, and the gate every
// read of a session passes first.
type Checker struct {
	root *layout.Root
	gate logfile.Gate
}

// New returns the checks of the store at root, whose reads pass gate.
func New(root *layout.Root, gate logfile.Gate) *Checker {
	return &Checker{root: root, gate: gate}
}

// Report is the facade's Verify of sessions ids (every session, in ID
// order, when none is given), forEach going through them (usage's
// ForSessions: the facade's forSessions); deep checks every revision's
// snapshot.
func (ck *Checker) Report(ctx context.Context, ids []session.SessionID, deep bool, forEach usage.ForSessions) (sessionstore.VerifyReport, error) {
	var rep sessionstore.VerifyReport
	_, err := forEach(ids, func(id session.SessionID) error {
		sr, err := ck.Session(ctx, id, deep)
		if err == nil {
			rep.Sessions = append(rep.Sessions, sr)
		}
		return err
	}, &rep.Unreadable)
	return rep, err
}

// Session checks one session as jsonlstore's Verify promises: its
// records (log and archives), then what else its archive and forensic
// directories hold. Each part adds findings to the report; a new kind of
// file gets its own function. Its error is for what kept it from checking
// the session at all (a closed store, a done context, a session that is
// not there, a permission or I/O error).
func (ck *Checker) Session(ctx context.Context, id session.SessionID, deep bool) (sessionstore.SessionVerifyReport, error) {
	sr := sessionstore.SessionVerifyReport{ID: id}
	if err := ck.gate.Exists(ctx, ck.root, id); err != nil {
		return sr, err
	}
	verifyLog := func(ctx context.Context, id session.SessionID, sr *sessionstore.SessionVerifyReport) error {
		return ck.verifyLog(ctx, id, sr, deep)
	}
	for _, part := range []func(context.Context, session.SessionID, *sessionstore.SessionVerifyReport) error{
		verifyLog, ck.verifyLinks, ck.verifyArchives, ck.verifyForensic,
	} {
		if err := part(ctx, id, &sr); err != nil {
			return sr, err
		}
	}
	return sr, nil
}

// verifyLog checks the log (and summary.json against it).
func (ck *Checker) verifyLog(ctx context.Context, id session.SessionID, sr *sessionstore.SessionVerifyReport, deep bool) error {
	c, err := ck.Records(ctx, id, deep)
	sr.Records = c.Records
	sr.Revision = c.Last.Through()
	sr.Notes = append(sr.Notes, c.Notes...)
	var ce *sessionstore.CorruptionError
	var ne *sessionstore.NewerRecordError
	switch {
	case errors.As(err, &ne):
		sr.Newer = NewerFinding(ne)
		return nil
	case errors.As(err, &ce):
		sr.Problems = append(sr.Problems, sessionstore.FindingOf(ce))
		return nil
	case err != nil:
		return err
	}
	if c.Tail.Bytes > 0 && ck.verifyTailStill(id, c.LogID, c.Tail.Start) {
		sr.Notes = append(sr.Notes, sessionstore.Finding{File: layout.LogPath(id), Offset: c.Tail.Start, Revision: sr.Revision + 1,
			Message: fmt.Sprintf("uncommitted tail of %d bytes (a torn or unacknowledged append, never part of the history); the next lease holder moves it to %s/", c.Tail.Bytes, layout.ForensicDir)})
	}
	return nil
}

// NewerFinding is the note on where a newer version's records begin.
func NewerFinding(ne *sessionstore.NewerRecordError) *sessionstore.Finding {
	return &sessionstore.Finding{File: ne.Path, Offset: ne.Offset, Revision: ne.Revision, Message: fmt.Sprintf(
		"written by a newer version (record format %d, kind %q): this record and the ones after it were not checked, and this program will not append to the session", ne.Version, ne.Kind)}
}

// Log is what Records found on the last view it read.
type Log struct {
	LogID   vfs.Identity           // the log's, on that view
	Records int                    // sound records, in sequence from revision 1
	Last    record.Meta            // the last of them (zero if none)
	Tail    record.Tail            // bytes after the last record: an uncommitted tail
	Notes   []sessionstore.Finding // a newer schema's snapshots, revisions a repair set aside
}

// Records reads session id's history forwards and checks everything
// Verify promises about it. It returns the first corruption as a
// *sessionstore.CorruptionError, confirmed on a fresh view (logfile.Read), or
// where a newer version's records begin (a
// *sessionstore.NewerRecordError); the Log describes the records
// before it.
func (ck *Checker) Records(ctx context.Context, id session.SessionID, deep bool) (Log, error) {
	var c Log
	err := ck.gate.Read(ctx, ck.root, id, func(v *logfile.View) error {
		c = Log{LogID: v.ID}
		return ck.verifyView(ctx, id, v, &c, deep)
	})
	return c, err
}

// verifyView checks one view of the log: every record (logfile.Rebuild), each
// delta applied to the previous snapshot and checked against the length
// and checksum it names (record.Snapshots, which keeps the snapshot as
// pieces: a delta costs what it changes), each snapshot decoded and
// restored, the bytes after the last record, and summary.json.
func (ck *Checker) verifyView(ctx context.Context, id session.SessionID, v *logfile.View, c *Log, deep bool) error {
	var lastSnap sessnap.Snapshot
	var lastRec *record.Rec
	newerSchema := false
	h := logfile.NewRebuild(ctx, ck.root.FS, id, v)
	defer h.Close()
	blobs := NewBlobs(ck.root.FS, id)
	restore := func(r *record.Rec, snap sessnap.Snapshot) error {
		if err := blobs.Check(r, snap.Messages); err != nil {
			return err
		}
		if _, err := snap.Restore(); err != nil {
			return &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
				Err: fmt.Errorf("snapshot does not restore: %w", err)}
		}
		if r.Schema > sessnap.SchemaVersion && !newerSchema {
			newerSchema = true
			c.Notes = append(c.Notes, sessionstore.Finding{File: r.Path, Offset: r.Offset, Revision: r.Rev,
				Message: fmt.Sprintf("written by snapshot schema %d (this program knows %d): readable, but this program will not append to the session", r.Schema, sessnap.SchemaVersion)})
		}
		return nil
	}
	// check decodes and restores the snapshot of r, its pages expanded
	// (its blobs checked, each once, but not read into it).
	check := func(r *record.Rec, snap []byte) error {
		c := blobfile.NewPageCache(ck.root.FS, id)
		rec, err := logfile.DecodeRecord(id, r, snap, c)
		c.Close()
		if err != nil {
			return err
		}
		if err := restore(r, rec.Snapshot); err != nil {
			return err
		}
		lastSnap = rec.Snapshot
		return nil
	}
	// checkPaged checks the snapshot of r, a full record, at the cost of
	// what it holds itself: its inline messages decoded and restored, and
	// each page it references, the first time one does (its blob checked,
	// its messages decoded and restored), so that the pages full records
	// share are checked once. It reports whether r held pages (else it was
	// checked as check checks it).
	pages := map[string]sessnap.Messages{} // the pages checked, and their messages
	checkPaged := func(r *record.Rec, snap []byte) (bool, error) {
		inline, refs, err := record.SplitPages(snap)
		if err != nil {
			return false, logfile.PageAt(id, r, err)
		}
		if refs == nil {
			return false, check(r, snap)
		}
		decoded, err := logfile.DecodeSnapshot(id, r, inline)
		if err != nil {
			return true, err
		}
		if err := restore(r, decoded); err != nil {
			return true, err
		}
		for _, p := range refs {
			if _, ok := pages[p.SHA256]; ok {
				continue
			}
			content, err := blobfile.Read(ck.root.FS, id, session.ContentRef{SHA256: p.SHA256, Size: p.Size})
			if err == nil {
				_, err = record.PageMessages(p, content)
			}
			var page []byte
			if err == nil {
				page, err = record.WithMessages(inline, content)
			}
			if err != nil {
				return true, logfile.PageAt(id, r, err)
			}
			if decoded, err = logfile.DecodeSnapshot(id, r, page); err != nil {
				return true, err
			}
			if err := restore(r, decoded); err != nil {
				return true, err
			}
			pages[p.SHA256] = decoded.Messages
		}
		return true, nil
	}
	// checkLatest checks the latest snapshot, r's, as check does: decoded
	// and restored whole, as a holder resumes it. The messages of the
	// pages checked above are not decoded again: the snapshot's inline
	// messages are, and the pages' decoded messages take their places
	// before them.
	checkLatest := func(r *record.Rec, snap []byte) error {
		inline, refs, lead, err := record.SplitLeading(snap)
		if err != nil {
			return logfile.PageAt(id, r, err)
		}
		var msgs sessnap.Messages
		for _, p := range refs {
			m, ok := pages[p.SHA256]
			if !ok || !lead {
				return check(r, snap)
			}
			msgs = append(msgs, m...)
		}
		if refs == nil {
			return check(r, snap)
		}
		decoded, err := logfile.DecodeSnapshot(id, r, inline)
		if err != nil {
			return err
		}
		decoded.Messages = append(msgs, decoded.Messages...)
		if err := restore(r, decoded); err != nil {
			return err
		}
		lastSnap = decoded
		return nil
	}
	var pending *record.Rec // the latest record not yet decoded (a delta)
	// Every delta is applied (by h) and checked against the length and
	// checksum it names, at the cost of what it changes.
	for h.Next() {
		r := h.Record()
		// The blobs a delta's new messages reference are checked there,
		// whatever later revisions keep of them.
		if r.Kind == record.KindDelta && r.Version >= record.Version4 {
			if err := blobs.CheckDelta(r); err != nil {
				return err
			}
		}
		pending = nil
		switch {
		case r.Kind == record.KindGap:
			g, _ := record.ParseGap(r.Payload)
			c.Notes = append(c.Notes, sessionstore.Finding{File: r.Path, Offset: r.Offset, Revision: r.Rev, Message: fmt.Sprintf(
				"revisions %d to %d are missing: a repair set them aside (%s)%s", r.Rev, r.Through(), g.Reason, forensicNote(g.Forensic))})
		case deep:
			if err := check(r, h.Snapshot()); err != nil {
				return err
			}
		case r.Kind == record.KindFull:
			// A full record is decoded and restored (a pass over what it
			// holds, pages checked once); with deep, every revision is.
			paged, err := checkPaged(r, h.Snapshot())
			if err != nil {
				return err
			}
			if paged {
				pending = r.Clone() // the latest is checked whole below
			}
		default:
			pending = r.Clone()
		}
		c.Records++
		c.Last = r.Meta
		lastRec = &record.Rec{Meta: r.Meta, Path: r.Path, Offset: r.Offset, LineLen: r.LineLen}
	}
	if err := h.Err(); err != nil {
		return err
	}
	// The latest revision is decoded and restored whatever its kind: it is
	// what a holder resumes.
	if pending != nil {
		if err := checkLatest(pending, h.Snapshot()); err != nil {
			return err
		}
	}
	// The bytes after the last record: an uncommitted tail, or damage that
	// recovery refuses to remove (then Acquire fails too).
	last, t, err := v.Back.Last()
	if err != nil {
		return err
	}
	if err := record.ClassifyTail(id, v.Name, last, t, logfile.Evidence(ck.root.FS, id, v), v.Back.At); err != nil {
		return err
	}
	c.Tail = t
	return ck.verifySummaryFile(id, v, lastRec, &lastSnap)
}

// Blobs checks the blobs snapshots reference, each once: that it
// exists and holds what its reference says (size and SHA-256).
type Blobs struct {
	fsys vfs.FS
	id   session.SessionID
	seen map[string]bool
}

// NewBlobs returns the check of session id's blobs in fsys.
func NewBlobs(fsys vfs.FS, id session.SessionID) *Blobs {
	return &Blobs{fsys: fsys, id: id, seen: map[string]bool{}}
}

// CheckDelta checks the blobs the messages delta r adds (or sets)
// reference: where a blob is first referenced, whatever later revisions
// keep of the message.
func (b *Blobs) CheckDelta(r *record.Rec) error {
	arr, err := record.DeltaMessages(r.Payload)
	if err != nil || arr == nil {
		return err // a malformed delta failed to apply already
	}
	var msgs sessnap.Messages
	if err := msgs.UnmarshalJSON(arr); err != nil {
		return &sessionstore.CorruptionError{ID: b.id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("delta's messages are not messages: %w", err)}
	}
	return b.Check(r, msgs)
}

// Check checks the blobs msgs, r's snapshot's messages, reference.
func (b *Blobs) Check(r *record.Rec, msgs sessnap.Messages) error {
	var err error
	msgs.Refs(func(ref session.ContentRef) {
		if err != nil || b.seen[ref.SHA256] {
			return
		}
		if err = blobfile.Check(b.fsys, b.id, ref); err != nil {
			err = logfile.BlobAt(r, err)
			return
		}
		b.seen[ref.SHA256] = true
	})
	return err
}

func forensicNote(file string) string {
	if file == "" {
		return ""
	}
	return "; their bytes are in " + file
}

// verifySummaryFile compares a summary.json written for exactly the log v
// views (same file, same size) with the log's last record. A summary
// written for another state of the log is a cache that lags and proves
// nothing; one that claims a revision the log lacks is caught by the scan
// (evidencedRevision).
func (ck *Checker) verifySummaryFile(id session.SessionID, v *logfile.View, last *record.Rec, snap *sessnap.Snapshot) error {
	sf, ok := logfile.ReadSummary(ck.root.FS, id)
	if !ok || sf.Log != v.ID || sf.LogSize != v.Size || last == nil {
		return nil
	}
	disagree := func(format string, args ...any) error {
		return &sessionstore.CorruptionError{ID: id, Path: layout.SummaryPath(id), Offset: 0, Revision: sf.Revision,
			Err: fmt.Errorf("summary.json disagrees with the log: "+format, args...)}
	}
	if sf.LastOffset != last.Offset || sf.Revision != last.Rev {
		return disagree("it names revision %d at offset %d, the log's last record is revision %d at offset %d",
			sf.Revision, sf.LastOffset, last.Rev, last.Offset)
	}
	want := logfile.ProjectRecord(last, snap, v.Size)
	if diff := verifySummaryDiff(sf.Summary, want); diff != "" {
		return disagree("%s", diff)
	}
	return nil
}

// verifySummaryDiff names the fields in which got differs from want (lease
// status aside, which is never cached), or returns "".
func verifySummaryDiff(got, want summary.Summary) string {
	got.Lease, want.Lease = summary.LeaseStatus{}, summary.LeaseStatus{}
	if got.Origin == nil {
		want.Origin = nil // written before summaries carried the origin
	}
	var g, w map[string]json.RawMessage
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if bytes.Equal(gb, wb) {
		return ""
	}
	_ = json.Unmarshal(gb, &g)
	_ = json.Unmarshal(wb, &w)
	var diff []byte
	for _, k := range verifyDiffKeys(g, w) {
		if !bytes.Equal(g[k], w[k]) {
			if len(diff) > 0 {
				diff = append(diff, "; "...)
			}
			diff = fmt.Appendf(diff, "%s is %s, the log says %s", k, verifyOrAbsent(g[k]), verifyOrAbsent(w[k]))
		}
	}
	return string(diff)
}

func verifyDiffKeys(a, b map[string]json.RawMessage) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]json.RawMessage{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func verifyOrAbsent(b json.RawMessage) string {
	if len(b) == 0 {
		return "absent"
	}
	const limit = 80
	if len(b) > limit {
		return string(b[:limit]) + "…"
	}
	return string(b)
}

// verifyTailStill confirms an uncommitted tail on a fresh view: a tail that
// a writer's append has since completed into a record, or that a new
// holder has removed, was a moment of a live store, not worth a note.
func (ck *Checker) verifyTailStill(id session.SessionID, logID vfs.Identity, start int64) bool {
	v, err := logfile.Open(ck.root.FS, id, ck.root.MaxRecordBytes)
	if err != nil {
		return false
	}
	defer func() { _ = v.Close() }() // read-only
	if v.ID != logID || v.Size <= start {
		return false
	}
	last, _, err := v.Back.Last()
	if err != nil {
		return false
	}
	return last == nil || last.End() <= start
}

// verifyArchives looks at what else archive/ holds. The archived
// revisions themselves (manifest, segment checksums, every record) are
// checked with the log's (Records reads them as History does);
// files a compaction in progress or an interrupted one left there —
// segments the manifest does not list or that reach into the log, whose
// revisions the log holds, and temporary files — are ignored by readers
// and reclaimed by the next compaction, so they are noted, not problems.
func (ck *Checker) verifyArchives(_ context.Context, id session.SessionID, sr *sessionstore.SessionVerifyReport) error {
	if _, err := ck.root.FS.Lstat(archive.Dir(id)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	m, err := archive.ReadManifest(ck.root.FS, id)
	if err != nil {
		return nil // needed by the log: Records reported it; else unused
	}
	v, err := logfile.Open(ck.root.FS, id, ck.root.MaxRecordBytes)
	if err != nil {
		return nil // the log's problems are verifyLog's
	}
	defer func() { _ = v.Close() }() // read-only
	l, err := compact.Leftovers(ck.root.FS, id, v, m)
	if err != nil {
		return nil
	}
	for _, p := range l.Paths(id) {
		sr.Notes = append(sr.Notes, sessionstore.Finding{File: p, Message: "not part of the archive (a compaction in progress, or left by an interrupted one): ignored by readers, reclaimed by the next compaction"})
	}
	if l.Overlap {
		sr.Notes = append(sr.Notes, sessionstore.Finding{File: archive.Dir(id) + "/" + archive.ManifestFile, Message: fmt.Sprintf(
			"lists segments that reach into the log (which starts at revision %d and holds those revisions): ignored by readers, reclaimed by the next compaction", l.LogFirst)})
	}
	return nil
}

// verifyForensic notes files kept in forensic/ by earlier recoveries and
// repairs: nothing is wrong, but they are bytes someone may want to look at
// (or delete).
func (ck *Checker) verifyForensic(_ context.Context, id session.SessionID, sr *sessionstore.SessionVerifyReport) error {
	dir := layout.SessionDir(id) + "/" + layout.ForensicDir
	n, size, err := usage.Dir(ck.root.FS, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return layout.OpErr("verify", id, err)
	case n > 0:
		sr.Notes = append(sr.Notes, sessionstore.Finding{File: dir, Message: fmt.Sprintf(
			"%d file(s), %d bytes, removed from the log by earlier recoveries or repairs", n, size)})
	}
	return nil
}

// verifyLinks notes names of session id that share their file with
// another name (a hard link): a holder refuses to append to such a log,
// and replaces such a summary.json rather than write through it.
func (ck *Checker) verifyLinks(_ context.Context, id session.SessionID, sr *sessionstore.SessionVerifyReport) error {
	for _, name := range []string{layout.LogPath(id), layout.SummaryPath(id)} {
		fi, err := ck.root.FS.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() || vfs.Links(fi) < 2 {
			continue // what is missing or of another kind, verifyLog reports
		}
		msg := fmt.Sprintf("%d hard links: the next holder replaces it with a file of its own instead of writing through the link", vfs.Links(fi))
		if name == layout.LogPath(id) {
			msg = fmt.Sprintf("%d hard links: no holder appends to it (%v) until it has a file of its own (%s); reading is unaffected",
				vfs.Links(fi), maintenance.ErrLinkedLog, logfile.BreakLink)
		}
		sr.Notes = append(sr.Notes, sessionstore.Finding{File: name, Message: msg})
	}
	return nil
}
