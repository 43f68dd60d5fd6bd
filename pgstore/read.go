package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// recordsPath is the Path of a CorruptionError about a stored record: the
// table. Its Offset is the record's offset among the session's lines as a
// log file would hold them, and Revision names the row.
const recordsPath = "pgstore_records"

// A session's rows are its record lines, stored verbatim, in revision
// order. They are read with internal/record's Reader and Snapshots, as the
// file store reads its log: framing, checksums and the sequence rules
// checked once, in one place; a newer program's record stops the read (a
// *sessionstore.NewerRecordError). What is particular to a table is
// checked here: each row holds the revision its key says.

// rowLines adapts rows of (revision, line) to a record.Source.
func rowLines(id session.SessionID, next func() (uint64, []byte, error)) record.Source {
	return record.Source{Path: recordsPath, NextLine: func() ([]byte, error) {
		rev, line, err := next()
		if err != nil {
			return nil, err
		}
		if got, ok := record.PeekRev(line); ok && got != rev {
			return nil, &sessionstore.CorruptionError{ID: id, Path: recordsPath, Revision: rev,
				Err: fmt.Errorf("row of revision %d holds revision %d", rev, got)}
		}
		return line, nil
	}}
}

// pullRows returns a next function over pgx rows of (rev, line).
func pullRows(rows pgx.Rows) func() (uint64, []byte, error) {
	return func() (uint64, []byte, error) {
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return 0, nil, err
			}
			return 0, nil, io.EOF
		}
		var r int64
		var line []byte
		if err := rows.Scan(&r, &line); err != nil {
			return 0, nil, err
		}
		rev, err := fromBigint("revision", r)
		return rev, line, err
	}
}

// decode turns a record whose snapshot encoding is payload (its pages
// expanded: blobReader.decode) into a Record.
func decode(id session.SessionID, r *record.Rec, payload []byte) (sessionstore.Record, error) {
	snap, err := sessnap.Unmarshal(payload)
	if err != nil {
		return sessionstore.Record{}, &sessionstore.CorruptionError{ID: id, Path: recordsPath, Offset: r.Offset, Revision: r.Rev, Err: err}
	}
	if snap.ID != id {
		return sessionstore.Record{}, &sessionstore.CorruptionError{ID: id, Path: recordsPath, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("snapshot of session %q", snap.ID)}
	}
	return sessionstore.Record{ID: id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: snap}, nil
}

// gapErr is the error for the revisions a gap record stands for.
func gapErr(id session.SessionID, r *record.Rec) error {
	g, _ := record.ParseGap(r.Payload) // parsed once already
	return &sessionstore.GapError{ID: id, First: r.Rev, Last: r.Through(), Reason: g.Reason, Forensic: g.Forensic}
}

// Load implements sessionstore.Store. It reads the records from the
// latest full record to the latest one (a writer keeps that chain within
// about one and a half snapshots), so its cost does not grow with the
// history, and then the content they keep out of line, in one query.
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	return s.load(ctx, id, 0, false)
}

// LoadWith implements sessionstore.Store: revision opts.Revision
// (the latest for 0), read as Load reads it; with WithoutContent, no
// content kept out of line is read, and its parts hold their references.
func (s *Store) LoadWith(ctx context.Context, id session.SessionID, opts sessionstore.LoadOptions) (sessionstore.Record, error) {
	return s.load(ctx, id, opts.Revision, opts.WithoutContent)
}

// LoadRevision implements sessionstore.Store. Revision 0 does not exist
// (Load reads the latest).
func (s *Store) LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	return adapter.LoadRevision(id, rev, func() error { return s.readyID(ctx, id) }, func() (sessionstore.Record, error) {
		return s.load(ctx, id, rev, false)
	})
}

// chainSQL selects the records that materialize revision $2 (the latest
// when $2 is beyond it): from the last full record at or below it.
const chainSQL = `SELECT rev, line FROM pgstore_records
	WHERE session_id = $1 AND rev <= $2 AND rev >= coalesce(
		(SELECT max(rev) FROM pgstore_records WHERE session_id = $1 AND rev <= $2 AND kind = 'full'), 1)
	ORDER BY rev`

// load reads revision rev (0: the latest), with its content kept out of
// line or (light) without it.
func (s *Store) load(ctx context.Context, id session.SessionID, rev uint64, light bool) (sessionstore.Record, error) {
	last, payload, err := s.loadPayload(ctx, id, rev)
	if err != nil {
		return sessionstore.Record{}, err
	}
	rec, err := s.newBlobReader(id).decode(ctx, last, payload, light)
	if err != nil {
		return sessionstore.Record{}, wrapErr("load", id, err)
	}
	return rec, nil
}

// loadPayload reads revision rev (0: the latest): its record and its
// stored snapshot (pages not expanded, content as references), from the
// rows of the chain's full record on, read with the sequence rules and
// rebuilt as pieces (record.Snapshots), written out once.
func (s *Store) loadPayload(ctx context.Context, id session.SessionID, rev uint64) (*record.Rec, []byte, error) {
	if err := s.readyID(ctx, id); err != nil {
		return nil, nil, err
	}
	target := int64(math.MaxInt64)
	if rev > 0 {
		target = int64(min(rev, math.MaxInt64))
	}
	rows, err := s.pool.Query(ctx, chainSQL, string(id), target)
	if err != nil {
		return nil, nil, wrapErr("load", id, err)
	}
	defer rows.Close()
	rd := record.NewReader(id, readCap, record.Resumed())
	rd.Read(rowLines(id, pullRows(rows)))
	snaps := record.NewSnapshots(id, readCap)
	var last *record.Rec
	for rd.Next() {
		if err := snaps.Add(rd.Record()); err != nil {
			return nil, nil, wrapErr("load", id, err)
		}
		last = rd.Record().Clone()
	}
	if err := rd.Err(); err != nil {
		return nil, nil, wrapErr("load", id, err)
	}
	if last == nil {
		return nil, nil, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	if rev > 0 && rev > last.Through() {
		return nil, nil, fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, last.Through())
	}
	if last.Kind == record.KindGap {
		return nil, nil, gapErr(id, last)
	}
	return last, snaps.Bytes(), nil
}

// historyPage is how many records History reads per query: it holds no
// connection while the caller handles a page.
const historyPage = 64

// History implements sessionstore.Store: the revisions present when it is
// called, read a page at a time. Revisions a repair set aside (in a
// session migrated from a repaired file store) are yielded as one
// *sessionstore.GapError in their place.
func (s *Store) History(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	return func(yield func(sessionstore.Record, error) bool) {
		snaps, recs := s.rebuilt(ctx, id)
		blobs := s.newBlobReader(id)
		for r, err := range recs {
			if err != nil {
				yield(sessionstore.Record{}, err)
				return
			}
			if r.Kind == record.KindGap {
				if !yield(sessionstore.Record{}, gapErr(id, r)) {
					return
				}
				continue
			}
			rec, err := blobs.decode(ctx, r, snaps.Bytes(), false)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// records yields every record of session id in revision order, checked by
// a record.Reader (its payload valid until the next), then an error, if
// any, once, last.
func (s *Store) records(ctx context.Context, id session.SessionID) iter.Seq2[*record.Rec, error] {
	return func(yield func(*record.Rec, error) bool) {
		next, stop := iter.Pull2(s.lines(ctx, id))
		defer stop()
		rd := record.NewReader(id, readCap, record.Seq{})
		rd.Read(rowLines(id, func() (uint64, []byte, error) {
			l, err, ok := next()
			switch {
			case !ok:
				return 0, nil, io.EOF
			case err != nil:
				return 0, nil, err
			}
			return l.rev, l.line, nil
		}))
		for rd.Next() {
			if !yield(rd.Record(), nil) {
				return
			}
		}
		if err := rd.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// rebuilt yields the records of session id as records does, each added
// first to the Snapshots it returns, whose Bytes are then that record's
// revision; an error adding one ends the sequence as a reading error does.
func (s *Store) rebuilt(ctx context.Context, id session.SessionID) (*record.Snapshots, iter.Seq2[*record.Rec, error]) {
	snaps := record.NewSnapshots(id, readCap)
	return snaps, func(yield func(*record.Rec, error) bool) {
		for r, err := range s.records(ctx, id) {
			if err == nil {
				err = ctx.Err() // interrupted: a read of every revision can be long
			}
			if err == nil {
				err = snaps.Add(r)
			}
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

// storedLine is one row of a session's records.
type storedLine struct {
	rev  uint64
	line []byte
}

// lines yields the stored lines of id in revision order, from 1 to the
// latest at the time of the call, a page per query.
func (s *Store) lines(ctx context.Context, id session.SessionID) iter.Seq2[storedLine, error] {
	return func(yield func(storedLine, error) bool) {
		if err := s.readyID(ctx, id); err != nil {
			yield(storedLine{}, err)
			return
		}
		var latest int64
		err := s.pool.QueryRow(ctx, `SELECT revision FROM pgstore_summaries WHERE session_id = $1`, string(id)).Scan(&latest)
		if errors.Is(err, pgx.ErrNoRows) {
			yield(storedLine{}, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id))
			return
		}
		if err != nil {
			yield(storedLine{}, wrapErr("read history of", id, err))
			return
		}
		for next := int64(1); next <= latest; {
			if err := s.ready(ctx); err != nil {
				yield(storedLine{}, opErr("session", id, err))
				return
			}
			rows, err := s.pool.Query(ctx, `SELECT rev, line FROM pgstore_records
				WHERE session_id = $1 AND rev >= $2 AND rev <= $3 ORDER BY rev LIMIT $4`,
				string(id), next, latest, historyPage)
			var page []storedLine
			var last int64 // the page's last revision, as stored
			if err == nil {
				var line []byte
				_, err = pgx.ForEachRow(rows, []any{&last, &line}, func() error {
					rev, err := fromBigint("revision", last)
					if err != nil {
						return err
					}
					page = append(page, storedLine{rev: rev, line: line})
					return nil
				})
			}
			if err != nil {
				yield(storedLine{}, wrapErr("read history of", id, err))
				return
			}
			if len(page) == 0 || page[0].rev != uint64(next) {
				// Deleted (perhaps created again) while reading.
				yield(storedLine{}, fmt.Errorf("%w: session %s: revision %d is gone", sessionstore.ErrNotFound, id, next))
				return
			}
			for _, l := range page {
				if !yield(l, nil) {
					return
				}
			}
			next = last + 1
		}
	}
}
