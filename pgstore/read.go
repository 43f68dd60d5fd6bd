package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// recordsPath is the Path of a CorruptionError about a stored record: the
// table; Offset is unused (0) and Revision names the row.
const recordsPath = "pgstore_records"

// materializer turns a session's record lines, in revision order, into
// records. Each line is checked as a reader of the file format checks it
// (framing, checksum, the revision its row claims, generations and times
// never going back). A full record's payload is the snapshot; a delta
// record's applies to the previous revision's snapshot (record.Apply). A
// kind this program does not know is corruption: it cannot rebuild the
// snapshot, and guessing would hand the caller a wrong one. Load reads from
// the last full record at or below the revision it wants (chainSQL) and
// applies the chain's deltas in one pass (loadPayload).
type materializer struct {
	id       session.SessionID
	maxBytes int
	prev     record.Meta
	payload  []byte // the previous record's materialized snapshot
}

func (m *materializer) corrupt(rev uint64, err error) error {
	return &sessionstore.CorruptionError{ID: m.id, Path: recordsPath, Revision: rev, Err: err}
}

// next checks line, the record stored as revision rev, and returns it as
// a Record.
func (m *materializer) next(rev uint64, line []byte) (sessionstore.Record, error) {
	rec, _, err := m.nextPayload(rev, line)
	return rec, err
}

// nextPayload is next that also returns the revision's snapshot encoding
// (the stored payload of a full record, verbatim).
func (m *materializer) nextPayload(rev uint64, line []byte) (sessionstore.Record, []byte, error) {
	meta, payload, err := m.parse(rev, line)
	if err != nil {
		return sessionstore.Record{}, nil, err
	}
	if payload, err = m.materialize(meta, payload); err != nil {
		return sessionstore.Record{}, nil, m.corrupt(rev, err)
	}
	rec, err := m.record(meta, payload)
	if err != nil {
		return sessionstore.Record{}, nil, err
	}
	m.prev, m.payload = meta, payload
	return rec, payload, nil
}

// record decodes the snapshot encoding payload of the record meta.
func (m *materializer) record(meta record.Meta, payload []byte) (sessionstore.Record, error) {
	snap, err := sessnap.Unmarshal(payload)
	if err != nil {
		return sessionstore.Record{}, m.corrupt(meta.Rev, err)
	}
	return sessionstore.Record{
		ID:            m.id,
		Revision:      meta.Rev,
		Generation:    meta.Gen,
		Time:          meta.Time,
		SchemaVersion: meta.Schema,
		Snapshot:      snap,
	}, nil
}

// materialize returns the snapshot encoding of a record of meta's kind
// with payload.
func (m *materializer) materialize(meta record.Meta, payload []byte) ([]byte, error) {
	switch meta.Kind {
	case record.KindFull:
		return payload, nil
	case record.KindDelta:
		if m.payload == nil {
			return nil, errors.New("a delta record without the revision it applies to")
		}
		return record.Apply(m.payload, payload, m.maxBytes)
	}
	return nil, fmt.Errorf("record kind %q is unknown to this program", meta.Kind)
}

// parse checks one stored line and its place in the sequence.
func (m *materializer) parse(rev uint64, line []byte) (record.Meta, []byte, error) {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return record.Meta{}, nil, m.corrupt(rev, fmt.Errorf("%w: line without its newline", record.ErrFraming))
	}
	meta, payload, err := record.Parse(line[:len(line)-1], m.maxBytes)
	if err != nil {
		return meta, nil, m.corrupt(rev, err)
	}
	switch {
	case meta.Rev != rev:
		err = fmt.Errorf("row of revision %d holds revision %d", rev, meta.Rev)
	case m.prev.Rev != 0 && meta.Rev != m.prev.Rev+1:
		err = fmt.Errorf("revision %d follows %d", meta.Rev, m.prev.Rev)
	case m.prev.Rev != 0 && meta.Gen < m.prev.Gen:
		err = fmt.Errorf("generation %d after %d", meta.Gen, m.prev.Gen)
	case m.prev.Rev != 0 && meta.Time.Before(m.prev.Time):
		err = fmt.Errorf("time %s before the previous record's %s", meta.Time, m.prev.Time)
	}
	if err != nil {
		return meta, nil, m.corrupt(rev, err)
	}
	return meta, payload, nil
}

// Load implements sessionstore.Store. It reads the records from the
// latest full record to the latest one: a single row while every record
// is full, so its cost does not grow with the history.
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	return s.load(ctx, id, 0)
}

// LoadRevision implements sessionstore.Store. Revision 0 does not exist
// (Load reads the latest).
func (s *Store) LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	if rev == 0 {
		if err := s.readyID(ctx, id); err != nil {
			return sessionstore.Record{}, err
		}
		return sessionstore.Record{}, fmt.Errorf("%w: session %s revision 0", sessionstore.ErrNotFound, id)
	}
	return s.load(ctx, id, rev)
}

// chainSQL selects the records that materialize revision $2 (the latest
// when $2 is beyond it): from the last full record at or below it.
const chainSQL = `SELECT rev, line FROM pgstore_records
	WHERE session_id = $1 AND rev <= $2 AND rev >= coalesce(
		(SELECT max(rev) FROM pgstore_records WHERE session_id = $1 AND rev <= $2 AND kind = 'full'), 1)
	ORDER BY rev`

// load reads revision rev (0: the latest).
func (s *Store) load(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	rec, _, err := s.loadPayload(ctx, id, rev)
	return rec, err
}

// loadPayload reads revision rev (0: the latest) and its snapshot
// encoding.
func (s *Store) loadPayload(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, []byte, error) {
	if err := s.readyID(ctx, id); err != nil {
		return sessionstore.Record{}, nil, err
	}
	target := int64(math.MaxInt64)
	if rev > 0 {
		target = int64(min(rev, math.MaxInt64))
	}
	rows, err := s.pool.Query(ctx, chainSQL, string(id), target)
	if err != nil {
		return sessionstore.Record{}, nil, wrapErr("load", id, err)
	}
	m := materializer{id: id, maxBytes: s.opts.MaxRecordBytes}
	var (
		full       []byte   // the chain's full record's payload
		deltas     [][]byte // the payloads of the deltas after it
		deltaBytes int      // their lines' bytes
		last       record.Meta
		got        bool
		r          int64
		line       []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&r, &line}, func() error {
		rev, err := fromBigint("revision", r)
		if err != nil {
			return err
		}
		meta, payload, err := m.parse(rev, line)
		if err != nil {
			return err
		}
		switch meta.Kind {
		case record.KindFull:
			full, deltas, deltaBytes = bytes.Clone(payload), nil, 0
		case record.KindDelta:
			// A writer keeps a chain's delta lines within the record cap
			// (record.Chain); a longer chain is damage, and is refused
			// before it costs more than the cap.
			deltaBytes += len(line)
			switch {
			case full == nil:
				return m.corrupt(rev, errors.New("a delta record without the full record it builds on"))
			case deltaBytes > m.maxBytes:
				return m.corrupt(rev, fmt.Errorf("the delta records after the last full one exceed the record cap (%d bytes)", m.maxBytes))
			}
			deltas = append(deltas, bytes.Clone(payload))
		default:
			return m.corrupt(rev, fmt.Errorf("record kind %q is unknown to this program", meta.Kind))
		}
		m.prev, last, got = meta, meta, true
		return nil
	})
	if err != nil {
		return sessionstore.Record{}, nil, wrapErr("load", id, err)
	}
	if !got {
		return sessionstore.Record{}, nil, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	payload, err := record.ApplyChain(full, deltas, m.maxBytes)
	if err != nil {
		return sessionstore.Record{}, nil, wrapErr("load", id, m.corrupt(last.Rev, err))
	}
	rec, err := m.record(last, payload)
	if err != nil {
		return sessionstore.Record{}, nil, wrapErr("load", id, err)
	}
	if rev > 0 && rec.Revision != rev {
		return sessionstore.Record{}, nil, fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, rec.Revision)
	}
	return rec, payload, nil
}

// historyPage is how many records History reads per query: it holds no
// connection while the caller handles a page.
const historyPage = 64

// History implements sessionstore.Store: the revisions present when it is
// called, read a page at a time.
func (s *Store) History(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	return func(yield func(sessionstore.Record, error) bool) {
		for rec, err := range s.lines(ctx, id) {
			if err != nil {
				yield(sessionstore.Record{}, err)
				return
			}
			r, err := rec.m.next(rec.rev, rec.line)
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

// storedLine is one row of a session's records, with the materializer
// that reads the sequence.
type storedLine struct {
	rev  uint64
	line []byte
	m    *materializer
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
		m := &materializer{id: id, maxBytes: s.opts.MaxRecordBytes}
		for next := int64(1); next <= latest; {
			if err := s.ready(ctx); err != nil {
				yield(storedLine{}, fmt.Errorf("pgstore: session %s: %w", id, err))
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
					page = append(page, storedLine{rev: rev, line: line, m: m})
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
