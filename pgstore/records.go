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
		for l, err := range s.lines(ctx, id) {
			if err != nil {
				yield(sessionstore.RecordInfo{}, err)
				return
			}
			m, payload, err := l.m.parse(l.rev, l.line)
			if err != nil {
				yield(sessionstore.RecordInfo{}, err)
				return
			}
			l.m.prev = m
			info := sessionstore.RecordInfo{Revision: m.Rev, Generation: m.Gen, Time: m.Time, Schema: m.Schema, Kind: m.Kind,
				File: recordsPath, Bytes: int64(len(l.line)), PayloadBytes: len(payload)}
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
		for l, err := range s.lines(ctx, id) {
			if err != nil {
				yield(nil, err)
				return
			}
			m, _, err := l.m.parse(l.rev, l.line)
			if err != nil {
				yield(nil, err)
				return
			}
			l.m.prev = m
			if !yield(l.line, nil) {
				return
			}
		}
	}
}

// Import creates session id from its record lines, copied verbatim, in
// one transaction: the lines (each with its newline) must be revisions 1,
// 2, … of session id, each passing the checks History makes; the latest
// must materialize (a known kind) for the summary. The session's lease is
// left free, at the highest generation in the records, so the next holder
// gets a higher one. Errors: ErrExists, a *sessionstore.CorruptionError
// for a line that fails its checks (nothing is imported), and lines'.
func (s *Store) Import(ctx context.Context, id session.SessionID, lines iter.Seq2[[]byte, error]) (int, error) {
	if err := s.readyID(ctx, id); err != nil {
		return 0, err
	}
	m := materializer{id: id, maxBytes: s.opts.MaxRecordBytes}
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
		var last sessionstore.Record
		var logBytes int64
		var rev uint64 // of the line at hand: n+1
		for line, err := range lines {
			if err != nil {
				return err
			}
			rev++
			rec, err := m.next(rev, line)
			if err != nil {
				return err
			}
			if rec.Snapshot.ID != id {
				return m.corrupt(rec.Revision, fmt.Errorf("snapshot of session %q", rec.Snapshot.ID))
			}
			if err := insertRecord(ctx, tx, id, m.prev, line); err != nil {
				return err
			}
			n++
			last, logBytes = rec, logBytes+int64(len(line))
		}
		if n == 0 {
			return fmt.Errorf("pgstore: import session %s: no records", id)
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
		_, err = tx.Exec(ctx, `UPDATE pgstore_sessions SET generation = $2 WHERE id = $1`, string(id), gen)
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
// with the stored snapshot byte for byte, stopping at the first record
// that fails its checks or does not decode (a *sessionstore.CorruptionError,
// after the revisions before it); with latestOnly, the latest snapshot
// alone, as indented JSON. The same session exports to the same bytes
// from either store.
func (s *Store) Export(ctx context.Context, id session.SessionID, w io.Writer, latestOnly bool) error {
	if latestOnly {
		// The stored snapshot, indented (not a re-encoding of the decoded
		// snapshot, which would drop a newer schema's unknown keys).
		_, payload, err := s.loadPayload(ctx, id, 0)
		if err != nil {
			return err
		}
		out, err := sessionstore.IndentSnapshot(payload)
		if err != nil {
			return fmt.Errorf("pgstore: export %s: %w", id, err)
		}
		_, err = w.Write(out)
		return err
	}
	var buf []byte
	for l, err := range s.lines(ctx, id) {
		if err != nil {
			return err
		}
		rec, payload, err := l.m.nextPayload(l.rev, l.line)
		if err != nil {
			return err
		}
		buf = appendExportLine(buf[:0], rec, payload)
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("pgstore: export %s: %w", id, err)
		}
	}
	return nil
}

// appendExportLine is the export line of rec.
func appendExportLine(b []byte, rec sessionstore.Record, payload []byte) []byte {
	return sessionstore.AppendExportLine(b, rec.Revision, rec.Generation, rec.Time, rec.SchemaVersion, payload)
}

// Verify checks every record of the given sessions (all sessions, in ID
// order, when none is given): framing, checksum and sequence as History
// checks them, that each payload decodes and restores to a Session, and
// that the summary row agrees with the latest record. Corruption goes
// into the report; the error is for what kept Verify from checking (an
// unknown session, the database unreachable). It takes no lease and
// modifies nothing.
func (s *Store) Verify(ctx context.Context, ids ...session.SessionID) (sessionstore.VerifyReport, error) {
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
		var err error
		for rec, herr := range s.History(ctx, id) {
			if err = herr; err != nil {
				break
			}
			if _, err = rec.Session(); err != nil {
				err = &sessionstore.CorruptionError{ID: id, Path: recordsPath, Revision: rec.Revision, Err: err}
				break
			}
			r.Records, r.Revision = r.Records+1, rec.Revision
		}
		if err == nil {
			err = s.verifySummary(ctx, id, r.Revision)
		}
		var ce *sessionstore.CorruptionError
		switch {
		case errors.As(err, &ce):
			r.Problems = append(r.Problems, sessionstore.FindingOf(ce))
		case err != nil:
			return out, err
		}
		out.Sessions = append(out.Sessions, r)
	}
	return out, nil
}

// verifySummary checks the summary row against the latest record.
func (s *Store) verifySummary(ctx context.Context, id session.SessionID, rev uint64) error {
	rec, err := s.Load(ctx, id)
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
		return nil, fmt.Errorf("pgstore: list sessions: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (session.SessionID, error) {
		var id string
		err := row.Scan(&id)
		return session.SessionID(id), err
	})
}
