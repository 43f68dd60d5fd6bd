package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/export"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Records yields the metadata of every record of session id as stored,
// in revision order, each line checked (framing, checksum, sequence) but
// its payload not decoded: what `sessions log` lists. A check that fails
// ends the sequence with a *sessionstore.CorruptionError, yielded once,
// last. File is the records table; Offset is 0.
func (s *Store) Records(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.RecordInfo, error] {
	return func(yield func(sessionstore.RecordInfo, error) bool) {
		for r, err := range s.records(ctx, id) {
			if err != nil {
				yield(sessionstore.RecordInfo{}, err)
				return
			}
			info := sessionstore.RecordInfo{Revision: r.Rev, Generation: r.Gen, Time: r.Time, Schema: r.Schema, Kind: r.Kind,
				File: recordsPath, Bytes: r.LineLen, PayloadBytes: len(r.Payload)}
			if !yield(info, nil) {
				return
			}
		}
	}
}

// RecordLines yields every record line of session id in revision order,
// each with its newline, exactly as stored, with the checks of Records:
// what Import (here or in jsonlstore) takes to copy a session verbatim.
func (s *Store) RecordLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for r, err := range s.records(ctx, id) {
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(r.Line(), nil) {
				return
			}
		}
	}
}

// Import creates session id from its record lines, copied verbatim, in
// one transaction: the lines (each with its newline) must be revisions 1,
// 2, … of session id, each passing the checks History makes; the latest
// must materialize (a known kind) for the summary. The content the records
// reference comes from blobs, once per content, checked against its
// reference's size and SHA-256, into pgstore_blobs in the same
// transaction. The session's lease is left free, at the highest
// generation in the records, so the next holder gets a higher one. Lines
// are read up to sessionstore.MaxReadRecordBytes, whatever the store's own
// cap; the session's recorded cap is the larger of the store's and its
// largest record (payload or snapshot), so its next holder can go on from
// its records. Errors: ErrExists, a *sessionstore.CorruptionError for a
// line that fails its checks or a reference blobs cannot satisfy (nil
// blobs, content it lacks or gives wrong: corruption at the first record
// that holds it; nothing is imported), and lines' and blobs' own.
func (s *Store) Import(ctx context.Context, id session.SessionID, lines iter.Seq2[[]byte, error], blobs sessionstore.BlobSource) (int, error) {
	if err := s.readyID(ctx, id); err != nil {
		return 0, err
	}
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO pgstore_sessions (id, generation, lease_state) VALUES ($1, 0, 'free')
			ON CONFLICT (id) DO NOTHING`, string(id))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
		}
		next, stop := iter.Pull2(lines)
		defer stop()
		rd := record.NewReader(id, readCap, record.Seq{})
		rd.Read(record.Source{Path: recordsPath, NextLine: func() ([]byte, error) {
			line, err, ok := next()
			if !ok {
				return nil, io.EOF
			}
			return line, err
		}})
		snaps := record.NewSnapshots(id, readCap)
		var last sessionstore.Record
		var lastRec *record.Rec
		var logBytes int64
		largest := s.opts.MaxRecordBytes // the session's cap: at least its largest record
		copied := map[string]int64{}
		// The pages a record references are copied first: decoding it
		// reads them back, from this transaction.
		br := s.blobReaderOn(tx, id)
		for rd.Next() {
			r := rd.Record()
			if err := snaps.Add(r); err != nil {
				return err
			}
			largest = max(largest, len(r.Payload))
			if r.Kind != record.KindGap {
				payload := snaps.Bytes()
				largest = max(largest, len(payload))
				var pages []session.ContentRef
				if err := record.Pages(payload, func(p record.PageRef) {
					pages = append(pages, session.ContentRef{SHA256: p.SHA256, Size: p.Size})
				}); err != nil {
					return &sessionstore.CorruptionError{ID: id, Path: recordsPath, Offset: r.Offset, Revision: r.Rev, Err: err}
				}
				if err := importBlobs(ctx, tx, id, r, pages, blobs, copied); err != nil {
					return err
				}
				if last, err = br.decode(ctx, r, payload, true); err != nil {
					return err
				}
				var refs []session.ContentRef
				last.Snapshot.Messages.Refs(func(ref session.ContentRef) { refs = append(refs, ref) })
				if err := importBlobs(ctx, tx, id, r, refs, blobs, copied); err != nil {
					return err
				}
			}
			if err := insertRecord(ctx, tx, id, r.Meta, r.Line()); err != nil {
				return err
			}
			n++
			lastRec, logBytes = r.Clone(), logBytes+r.LineLen
		}
		if err := rd.Err(); err != nil {
			return err
		}
		if lastRec != nil && lastRec.Kind == record.KindGap {
			return gapErr(id, lastRec) // a log ends with a readable revision
		}
		if n == 0 {
			return opErr("import", id, errors.New("no records"))
		}
		sum := summary.Project(&last.Snapshot, last.Revision, last.Generation, last.Time)
		sum.Sizes.LogBytes = logBytes
		if err := putSummary(ctx, tx, &sum, last.SchemaVersion); err != nil {
			return err
		}
		gen, err := toBigint("generation", last.Generation)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE pgstore_sessions SET generation = $2, max_record_bytes = $3 WHERE id = $1`, string(id), gen, largest)
		return err
	})
	if err != nil {
		return 0, wrapErr("import", id, err)
	}
	return n, nil
}

// Export writes session id to w exactly as jsonlstore.Store.Export does:
// by default every revision, oldest first, as JSON Lines
//
//	{"revision":1,"generation":1,"time":"2026-11-29T12:00:01Z","schema":1,"snapshot":{…}}
//
// with the stored snapshot byte for byte (or, when its parts keep content
// out of line, the snapshot with that content read back in, encoded
// again, so that an export stands on its own), stopping at the first
// record that fails its checks or does not decode (a
// *sessionstore.CorruptionError, after the revisions before it); with
// latestOnly, the latest snapshot alone, as indented JSON. The same
// session exports to the same bytes from either store.
func (s *Store) Export(ctx context.Context, id session.SessionID, w io.Writer, latestOnly bool) error {
	if latestOnly {
		// The stored snapshot, indented (not a re-encoding of the decoded
		// snapshot, which would drop a newer schema's unknown keys).
		last, payload, err := s.loadPayload(ctx, id, 0)
		if err == nil {
			payload, err = exportSnapshot(ctx, last, payload, s.newBlobReader(id))
		}
		if err != nil {
			return err
		}
		out, err := export.Indent(payload)
		if err != nil {
			return opErr("export", id, err)
		}
		_, err = w.Write(out)
		return err
	}
	var buf []byte
	snaps, recs := s.rebuilt(ctx, id)
	blobs := s.newBlobReader(id)
	for r, err := range recs {
		if err != nil {
			return err
		}
		if r.Kind == record.KindGap {
			continue // a gap's revisions have no snapshot to export
		}
		payload, err := exportSnapshot(ctx, r, snaps.Bytes(), blobs)
		if err != nil {
			return err
		}
		buf = record.AppendExportLine(buf[:0], r.Meta, payload)
		if _, err := w.Write(buf); err != nil {
			return opErr("export", id, err)
		}
	}
	return nil
}

// exportSnapshot checks that payload, the stored snapshot of record r,
// decodes, and returns the snapshot to export (record.ExportSnapshot, as
// the file store exports it), its content read by blobs.
func exportSnapshot(ctx context.Context, r *record.Rec, payload []byte, blobs *blobReader) ([]byte, error) {
	rec, err := blobs.decode(ctx, r, payload, true)
	if err != nil {
		return nil, err
	}
	return record.ExportSnapshot(rec.ID, r, payload, &rec.Snapshot, func() error { return blobs.resolve(ctx, r, &rec.Snapshot) })
}

// Verify checks every record of the given sessions (all sessions, in ID
// order, when none is given): framing, checksum and sequence as History
// checks them, that each payload decodes and restores to a Session, that
// the content each reference names is in pgstore_blobs with its size and
// SHA-256 (checked once per content, by the server), and that the summary
// row agrees with the latest record. Corruption goes into the report; the
// error is for what kept Verify from checking (an unknown session, the
// database unreachable). It takes no lease and modifies nothing.
func (s *Store) Verify(ctx context.Context, ids ...session.SessionID) (sessionstore.VerifyReport, error) {
	return s.VerifyWith(ctx, sessionstore.VerifyOptions{}, ids...)
}

// VerifyWith implements sessionstore.Verifier: Verify, whatever opts say,
// since Verify decodes, restores and checks the content of every revision
// already (what VerifyOptions.Deep asks for).
func (s *Store) VerifyWith(ctx context.Context, _ sessionstore.VerifyOptions, ids ...session.SessionID) (sessionstore.VerifyReport, error) {
	var out sessionstore.VerifyReport
	if len(ids) == 0 {
		all, err := s.IDs(ctx)
		if err != nil {
			return out, err
		}
		ids = all
	}
	for _, id := range ids {
		r := sessionstore.SessionVerifyReport{ID: id}
		err := s.verifyRecords(ctx, id, &r)
		if err == nil {
			err = s.verifySummary(ctx, id, r.Revision)
		}
		var ce *sessionstore.CorruptionError
		var ne *sessionstore.NewerRecordError
		switch {
		case errors.As(err, &ce):
			r.Problems = append(r.Problems, sessionstore.FindingOf(ce))
		case errors.As(err, &ne):
			r.Newer = &sessionstore.Finding{File: ne.Path, Offset: ne.Offset, Revision: ne.Revision, Message: ne.Error()}
		case err != nil:
			return out, err
		}
		out.Sessions = append(out.Sessions, r)
	}
	return out, nil
}

// verifyRecords checks session id's records, counting the sound ones in
// r, and then the content they reference.
func (s *Store) verifyRecords(ctx context.Context, id session.SessionID, r *sessionstore.SessionVerifyReport) error {
	refs := map[session.ContentRef]refAt{}
	var sound []uint64
	snaps, recs := s.rebuilt(ctx, id)
	br := s.newBlobReader(id) // pages, read and checked once each
	for rec, err := range recs {
		if err != nil {
			return err
		}
		if rec.Kind == record.KindGap {
			continue // set aside by a repair (migrated): the rest reads
		}
		dec, err := br.decode(ctx, rec, snaps.Bytes(), true)
		if err != nil {
			return err
		}
		if _, err := dec.Session(); err != nil {
			return &sessionstore.CorruptionError{ID: id, Path: recordsPath, Offset: rec.Offset, Revision: rec.Rev, Err: err}
		}
		var at *record.Rec
		dec.Snapshot.Messages.Refs(func(ref session.ContentRef) {
			if _, ok := refs[ref]; !ok {
				if at == nil {
					at = rec.Clone()
				}
				refs[ref] = refAt{ref: ref, rec: at}
			}
		})
		sound = append(sound, rec.Rev)
		r.Records, r.Revision = r.Records+1, rec.Rev
	}
	err := s.verifyBlobs(ctx, id, refs)
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) {
		// The records before the first that references bad content are
		// sound (verifyBlobs reports the first).
		r.Records, r.Revision = 0, 0
		for _, rev := range sound {
			if rev < ce.Revision {
				r.Records, r.Revision = r.Records+1, rev
			}
		}
	}
	return err
}

// verifySummary checks the summary row against the latest record.
func (s *Store) verifySummary(ctx context.Context, id session.SessionID, rev uint64) error {
	rec, err := s.LoadWith(ctx, id, sessionstore.LoadOptions{WithoutContent: true})
	if err != nil {
		return err
	}
	sum, ok, err := s.summaryOf(ctx, s.pool, id)
	if err != nil {
		return wrapErr("verify", id, err)
	}
	if !ok {
		return fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	want := summary.Project(&rec.Snapshot, rec.Revision, rec.Generation, rec.Time)
	want.Sizes = sum.Sizes
	if sum.Origin == nil {
		want.Origin = nil // written before summaries carried the origin
	}
	if rec.Revision < rev || !summariesEqual(sum, want) {
		return &sessionstore.CorruptionError{ID: id, Path: "pgstore_summaries", Revision: rec.Revision,
			Err: errors.New("the summary disagrees with the latest record")}
	}
	return nil
}

func summariesEqual(a, b summary.Summary) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// IDs returns the ID of every session, in ID order.
func (s *Store) IDs(ctx context.Context) ([]session.SessionID, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM pgstore_sessions ORDER BY id`)
	if err != nil {
		return nil, opErr("list sessions", "", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (session.SessionID, error) {
		var id string
		err := row.Scan(&id)
		return session.SessionID(id), err
	})
}
