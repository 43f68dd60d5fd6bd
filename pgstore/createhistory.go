package pgstore

import (
	"context"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

var _ sessionstore.HistoryCreator = (*Store)(nil)

// CreateHistory creates a session whose revisions are the snapshots snaps
// yields, in one transaction: the session's row with its lease held by
// the returned writer, every record (a delta where it is smaller than the
// snapshot, as internal/appender builds them), one summary of the last
// revision and one change notification. The whole history commits at
// once, with one flush of the server's write-ahead log instead of one per
// revision, or not at all: an error or a lost connection before the
// commit leaves no session. The records are copied to the server as they
// are built (COPY), so the history need not fit in memory.
//
// It returns the writer at the last revision. Errors: Create's,
// ErrInvalidSnapshot for an empty sequence or a snapshot of another
// session, and the sequence's own; on any of them nothing is created.
func (s *Store) CreateHistory(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	next, stop := iter.Pull2(snaps)
	defer stop()
	first, err, ok := next()
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: an empty history", sessionstore.ErrInvalidSnapshot)
	case err != nil:
		return nil, err
	}
	id := first.ID
	if err := s.readyID(ctx, id); err != nil {
		return nil, err
	}
	w := s.newWriter(id, 1)
	var lastRev uint64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO pgstore_sessions
			(id, generation, lease_state, expires_at, nonce, host, pid, label, acquired_at, heartbeat_at)
			VALUES ($1, 1, 'held', clock_timestamp() + $2 * interval '1 microsecond', $3, $4, $5, $6, clock_timestamp(), clock_timestamp())
			ON CONFLICT (id) DO NOTHING`,
			string(id), s.opts.LeaseTTL.Microseconds(), w.nonce, s.host, s.pid, opts.Label)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
		}
		// Records are built as the rows are copied: the source pulls one
		// snapshot at a time.
		rows := &historyRows{s: s, id: id, next: next, snap: first, app: appender.New(nil, s.opts.MaxRecordBytes, false)}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pgstore_records"},
			[]string{"session_id", "rev", "gen", "time", "kind", "schema", "line"}, rows); err != nil {
			if rows.err != nil {
				return rows.err // the history's own error, not the copy's report of it
			}
			return err
		}
		if rows.err != nil {
			return rows.err
		}
		sum := summary.Project(&rows.latest, rows.m.Rev, rows.m.Gen, rows.m.Time)
		sum.Sizes.LogBytes = rows.bytes
		lastRev = rows.m.Rev
		return putSummary(ctx, tx, &sum, rows.m.Schema)
	})
	if err != nil {
		return nil, wrapErr("create", id, err)
	}
	w.rev.Store(lastRev)
	s.startWriter(w, opts)
	return w, nil
}

// historyRows is the pgx.CopyFromSource of a history's records: each Next
// builds the next revision's record from the next snapshot.
type historyRows struct {
	s      *Store
	id     session.SessionID
	next   func() (sessnap.Snapshot, error, bool)
	snap   sessnap.Snapshot // the snapshot of the next row, when pending
	done   bool
	app    *appender.Appender
	m      record.Meta // the last row's envelope
	latest sessnap.Snapshot
	line   []byte
	bytes  int64
	err    error
}

func (r *historyRows) Next() bool {
	if r.done || r.err != nil {
		return false
	}
	if r.m.Rev > 0 {
		snap, err, ok := r.next()
		switch {
		case !ok:
			r.done = true
			return false
		case err != nil:
			r.err = err
			return false
		case snap.ID != r.id:
			r.err = fmt.Errorf("%w: snapshot of session %q in the history of %s", sessionstore.ErrInvalidSnapshot, snap.ID, r.id)
			return false
		}
		r.snap = snap
	}
	// A record's time is never earlier than the previous record's.
	t := r.s.now()
	if t.Before(r.m.Time) {
		t = r.m.Time
	}
	m := record.Meta{Schema: sessnap.SchemaVersion, Rev: r.m.Rev + 1, Gen: 1, Time: t}
	line, err := r.app.Line(r.id, m, r.snap)
	if err != nil {
		r.err = err
		return false
	}
	// The appender chose the record's kind and version: the row's kind
	// column is read back from the line it built.
	if m, _, err = record.Parse(line[:len(line)-1], len(line)); err != nil {
		r.err = fmt.Errorf("pgstore: create %s: %w", r.id, err)
		return false
	}
	r.m, r.line, r.latest = m, line, r.snap
	r.bytes += int64(len(line))
	return true
}

func (r *historyRows) Values() ([]any, error) {
	rev, err := toBigint("revision", r.m.Rev)
	if err != nil {
		return nil, err
	}
	return []any{string(r.id), rev, int64(1), r.m.Time, r.m.Kind, r.m.Schema, r.line}, nil
}

func (r *historyRows) Err() error { return r.err }
