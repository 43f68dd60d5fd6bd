package jsonlstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// IDs returns the ID of every session directory under the root, in ID
// order, sessions whose logs are damaged included (List leaves those
// out). Errors: ErrClosed, I/O errors.
func (s *Store) IDs(ctx context.Context) ([]session.SessionID, error) {
	if s.closed.Load() {
		return nil, sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids, err := s.sessionIDs()
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// Import creates session id from its record lines, copied verbatim: the
// lines (each with its newline, as RecordLines yields them) must be
// revisions 1, 2, … of session id, and each must pass the checks History
// makes — the store's own reader (internal/record) checks framing,
// checksum and the sequence rules, each delta is applied to the revision
// before it, and each payload must decode to a snapshot of session id. It
// is how a session is copied into this store from another store of the
// same record format (another directory, or a database: pgstore).
//
// The session is created as Create creates one: its log is written into
// a temporary directory under its lease and synced, then the directory is
// renamed into place without replacing anything and the root is synced;
// a session whose records fail a check is never published. It is left
// with a free lease whose generation is above every generation in the
// records, and a summary. Lines are read up to MaxReadRecordBytes,
// whatever the store's own cap, and the session's settings.json records
// the larger of the store's cap and its largest record (payload or
// snapshot), so that every reader reads it and its next holder can go on
// from its records.
//
// The content the records reference (their blobs) comes from blobs, once
// per content, checked against its reference's size and SHA-256, and is
// written into the new session's blobs/ (compressed where that pays) and
// synced before the session is published. A reference blobs cannot
// satisfy (nil blobs, content it lacks or gives wrong) is corruption at
// the first record that holds it: nothing is created.
//
// Import returns the number of records. Errors: ErrInvalidID, ErrClosed,
// ErrExists, a *sessionstore.CorruptionError for a line that fails its
// checks or a blob the source lacks (nothing is created), a
// *sessionstore.NewerRecordError for a record of a newer program, a
// *sessionstore.GapError when the last record is a gap, lines' and blobs'
// own errors, I/O errors. As with Create, on error the session either does
// not exist or exists whole.
func (s *Store) Import(ctx context.Context, id session.SessionID, lines iter.Seq2[[]byte, error], blobs sessionstore.BlobSource) (n int, err error) {
	if err := s.check(ctx, id); err != nil {
		return 0, err
	}
	opts := sessionstore.AcquireOptions{Label: "import"}
	b, err := s.startSession(ctx, id, opts, s.opts.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			b.abort(ctx)
			n = 0
		}
	}()

	next, stop := iter.Pull2(lines)
	defer stop()
	var srcErr error // the source's own error, reported as it is
	rd := record.NewReader(id, MaxReadRecordBytes, record.Seq{})
	rd.Read(record.Source{Path: layout.LogPath(id), NextLine: func() ([]byte, error) {
		line, err, ok := next()
		switch {
		case !ok:
			return nil, io.EOF
		case err != nil:
			srcErr = err
		}
		return line, err
	}})
	snaps := record.NewSnapshots(id, MaxReadRecordBytes)
	largest := s.opts.MaxRecordBytes // the session's cap: at least its largest record
	var last *record.Rec
	var latest sessionstore.Record
	var size int64
	bw := bufio.NewWriterSize(b.log, 1<<20)
	copied := blobfile.NewWriter(s.fs, b.tmp, 0)
	seen := map[string]bool{}
	pages := map[string][]byte{} // the latest record's pages, by SHA-256
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		r := rd.Record()
		if err := snaps.Add(r); err != nil {
			return 0, err
		}
		largest = max(largest, len(r.Payload))
		if r.Kind != record.KindGap {
			snap := snaps.Bytes()
			largest = max(largest, len(snap))
			pc, err := s.importPages(id, r, snap, blobs, copied, pages)
			if err != nil {
				return 0, err
			}
			latest, err = logfile.DecodeRecord(id, r, snap, pc)
			pc.Close()
			if err != nil {
				return 0, err
			}
			if err := copyBlobs(id, r, latest.Snapshot.Messages, blobs, copied, seen); err != nil {
				return 0, err
			}
		}
		if _, err := bw.Write(r.Line()); err != nil {
			return 0, layout.OpErr("import", id, fmt.Errorf("write log: %w", err))
		}
		n++
		size += r.LineLen
		last = r.Clone()
	}
	switch err := rd.Err(); {
	case srcErr != nil:
		return 0, layout.OpErr("import", id, srcErr)
	case err != nil:
		return 0, err
	case last == nil:
		return 0, layout.OpErr("import", id, errors.New("no records"))
	case last.Kind == record.KindGap:
		return 0, logfile.GapError(id, last) // a log ends with a readable revision
	}
	if err = bw.Flush(); err == nil {
		err = b.log.Datasync()
	}
	if err != nil {
		return 0, layout.OpErr("import", id, fmt.Errorf("write log: %w", err))
	}
	if err = copied.Sync(); err != nil {
		return 0, layout.OpErr("import", id, err)
	}
	if largest > s.opts.MaxRecordBytes {
		// Replaces the store's own cap, recorded at the start; synced with
		// the directory before publish.
		data, _ := json.Marshal(layout.Settings{MaxRecordBytes: largest}) // an int: cannot fail
		if err = s.root.WriteSettings(b.tmp, data, false); err != nil {
			return 0, err
		}
	}

	// Retake the lease above the records' generations, so that the lease
	// record tells the truth about the session. (Acquire would give a
	// higher generation anyway: it reads the log's last one.) Releasing
	// rewrites lease.json, which makes the directory new again for the
	// sweep of leftovers in between.
	if last.Gen >= b.lease.Generation() {
		err = b.lease.Release(context.WithoutCancel(ctx))
		b.lease = nil
		if err != nil {
			return 0, layout.OpErr("import", id, fmt.Errorf("lease: %w", err))
		}
		if b.lease, b.marked, err = s.takeLease(ctx, id, b.tmp, true, s.leaseOptions(opts, last.Gen)); err != nil {
			return 0, layout.OpErr("import", id, fmt.Errorf("lease: %w", err))
		}
	}
	if err = b.publish(ctx); err != nil {
		return 0, err
	}
	// Published: from here on the session exists whole, whatever fails.
	last.Offset = size - last.LineLen
	s.writeImportSummary(b, last, &latest.Snapshot)
	err = b.lease.Release(context.WithoutCancel(ctx))
	b.lease = nil
	_ = b.log.Close() // written and synced above; nothing is written after
	b.log = nil
	if err != nil {
		return n, layout.OpErr("import", id, fmt.Errorf("release: %w", err))
	}
	return n, nil
}

// writeImportSummary writes the summary of a published import whose last
// record is last. The summary is a cache: failing to write it fails
// nothing.
func (s *Store) writeImportSummary(b *newSession, last *record.Rec, snap *sessnap.Snapshot) {
	fi, err := b.log.Stat()
	if err != nil || fi.Size() != last.End() {
		return // none is better than a wrong one
	}
	dir, err := vfs.Sub(s.fs, layout.SessionDir(b.id))
	if err != nil {
		return
	}
	defer func() { _ = dir.Close() }() // a directory handle, read-only
	var sw logfile.SummaryWriter
	defer sw.Close()
	sf := logfile.SummaryFile{Log: vfs.IdentityOf(fi), LogSize: last.End(), LogMtime: fi.ModTime().UnixNano(),
		LastOffset: last.Offset, Revision: last.Rev, Summary: logfile.ProjectRecord(last, snap, last.End())}
	if err := sw.Write(dir, sf); err != nil {
		s.opts.Logger.Warn("jsonlstore: summary not written", "session", b.id, "err", err)
	}
}

// importPages copies into w the pages snap (record r's snapshot)
// references, from src, checked, and returns a light cache holding them,
// for logfile.DecodeRecord: they are not in the session's directory yet. held is
// the pages of the record before (a chain's records share its full
// record's), kept so that each is read from src once, and becomes r's.
func (s *Store) importPages(id session.SessionID, r *record.Rec, snap []byte, src sessionstore.BlobSource, w *blobfile.Writer, held map[string][]byte) (*blobfile.Cache, error) {
	c := blobfile.NewPageCache(s.fs, id)
	var err error
	if perr := record.Pages(snap, func(p record.PageRef) {
		if err != nil {
			return
		}
		content, ok := held[p.SHA256]
		if !ok {
			content, err = copyBlob(id, r, session.ContentRef{SHA256: p.SHA256, Size: p.Size}, src, w)
		}
		c.Hold(p.SHA256, content)
	}); perr != nil {
		return nil, logfile.PageAt(id, r, perr)
	}
	if err != nil {
		return nil, err
	}
	clear(held)
	c.CopyTo(held)
	return c, nil
}

// copyBlobs writes into w the content of every reference in msgs (the
// snapshot of record r) not copied before (seen), from src, checked.
func copyBlobs(id session.SessionID, r *record.Rec, msgs sessnap.Messages, src sessionstore.BlobSource, w *blobfile.Writer, seen map[string]bool) error {
	var err error
	msgs.Refs(func(ref session.ContentRef) {
		if err != nil || seen[ref.SHA256] {
			return
		}
		if _, err = copyBlob(id, r, ref, src, w); err == nil {
			seen[ref.SHA256] = true
		}
	})
	return err
}

// copyBlob writes into w the blob ref names (a page, or part content), from
// src, checked, and returns it. A reference src cannot satisfy is
// corruption at r, the record that references it.
func copyBlob(id session.SessionID, r *record.Rec, ref session.ContentRef, src sessionstore.BlobSource, w *blobfile.Writer) ([]byte, error) {
	content, err := blob.Fetch(src, ref)
	if errors.Is(err, blob.ErrMissing) {
		return nil, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev, Err: fmt.Errorf("%w: blob %w", ErrBlob, err)}
	}
	if err != nil {
		return nil, err
	}
	return content, w.Put(ref.SHA256, content)
}
