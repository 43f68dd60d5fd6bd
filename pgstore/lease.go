package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// A lease is the lease columns of the session's row in pgstore_sessions.
// It is held while lease_state is 'held' and expires_at is in the future
// by the database server's clock; a held lease past expires_at is stale
// (its holder stopped heartbeating) and may be taken over. Taking it
// increments generation and sets a fresh nonce in one transaction, under
// the row's lock; every append, heartbeat, release and delete locks the
// same row and checks generation, nonce and expiry first (fencing), so a
// holder that lost its lease writes nothing.

// leaseRow is a session's lease as read from its row.
type leaseRow struct {
	gen         uint64
	state       string // "held" or "free"
	nonce       string
	host        string
	pid         int
	label       string
	acquiredAt  *time.Time
	heartbeatAt *time.Time
	expired     bool          // held and past expires_at (or no expiry)
	remaining   time.Duration // until expires_at, when held
	age         time.Duration // since heartbeat_at
}

// leaseCols selects a leaseRow; times are compared on the server's clock.
var leaseCols = leaseColsOf("")

// leaseColsOf is leaseCols of the session row named p ("l." for a join).
func leaseColsOf(p string) string {
	return strings.NewReplacer("$", p).Replace(`$generation, $lease_state, $nonce, $host, $pid, $label, $acquired_at, $heartbeat_at,
	coalesce($expires_at <= clock_timestamp(), true),
	coalesce((extract(epoch from $expires_at - clock_timestamp()) * 1e6)::bigint, 0),
	coalesce((extract(epoch from clock_timestamp() - $heartbeat_at) * 1e6)::bigint, 0)`)
}

func scanLease(row pgx.Row) (leaseRow, error) {
	var l leaseRow
	var gen, remaining, age int64
	var pid int32
	err := row.Scan(&gen, &l.state, &l.nonce, &l.host, &pid, &l.label, &l.acquiredAt, &l.heartbeatAt,
		&l.expired, &remaining, &age)
	if err != nil {
		return l, err
	}
	l.pid = int(pid)
	l.remaining, l.age = time.Duration(remaining)*time.Microsecond, time.Duration(age)*time.Microsecond
	l.gen, err = fromBigint("generation", gen)
	return l, err
}

// lockLease reads id's lease and locks its row to the end of tx. A
// missing session is ErrNotFound.
func lockLease(ctx context.Context, tx pgx.Tx, id session.SessionID) (leaseRow, error) {
	l, err := scanLease(tx.QueryRow(ctx, `SELECT `+leaseCols+` FROM pgstore_sessions WHERE id = $1 FOR UPDATE`, string(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return l, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	return l, err
}

func (l leaseRow) live() bool { return l.state == "held" && !l.expired }

// status is the lease as readers see it.
func (l leaseRow) status() summary.LeaseStatus {
	st := summary.LeaseStatus{Generation: l.gen}
	switch {
	case l.live():
		st.State = summary.LeaseHeld
		st.HeartbeatAge = max(0, l.age)
	case l.state == "held":
		st.State = summary.LeaseStale
	default:
		st.State = summary.LeaseFree
	}
	if l.gen > 0 {
		h := summary.Holder{Host: l.host, PID: l.pid, Label: l.label}
		if l.acquiredAt != nil {
			h.AcquiredAt = l.acquiredAt.UTC()
		}
		if l.heartbeatAt != nil {
			h.HeartbeatAt = l.heartbeatAt.UTC()
		}
		st.Holder = &h
	}
	return st
}

// Lease implements sessionstore.Store.
func (s *Store) Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error) {
	if err := s.readyID(ctx, id); err != nil {
		return summary.LeaseStatus{}, err
	}
	l, err := scanLease(s.pool.QueryRow(ctx, `SELECT `+leaseCols+` FROM pgstore_sessions WHERE id = $1`, string(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return summary.LeaseStatus{}, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	if err != nil {
		return summary.LeaseStatus{}, wrapErr("read lease of", id, err)
	}
	return l.status(), nil
}

// Acquire implements sessionstore.Store: it waits while another holder's
// lease is live, until ctx is done or the store is closed. A release by a
// writer of this store wakes it at once; a release elsewhere is seen
// within Options.AcquirePoll, an expiry as it happens.
func (s *Store) Acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, true)
}

// TryAcquire implements sessionstore.Store.
func (s *Store) TryAcquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, false)
}

func (s *Store) acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, wait bool) (sessionstore.Writer, error) {
	if err := s.readyID(ctx, id); err != nil {
		return nil, err
	}
	backoff := 5 * time.Millisecond
	for {
		// Taken before looking, so a release after the look still wakes
		// the wait below.
		freed := s.freedChan()
		if err := s.readyID(ctx, id); err != nil {
			return nil, err
		}
		w, held, err := s.tryTake(ctx, id, opts)
		if err != nil {
			return nil, wrapErr("acquire", id, err)
		}
		if w != nil {
			return w, nil
		}
		if !wait {
			return nil, &sessionstore.LeaseHeldError{ID: id, Status: held.status()}
		}
		sleep := min(backoff, max(held.remaining, time.Millisecond))
		backoff = min(2*backoff, s.opts.AcquirePoll)
		timer := time.NewTimer(sleep)
		select {
		case <-freed:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
}

// tryTake takes id's lease if it is free or stale, returning the new
// writer; if a live holder has it, it returns that holder's lease.
func (s *Store) tryTake(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (*writer, leaseRow, error) {
	var w *writer
	var held leaseRow
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		l, err := lockLease(ctx, tx, id)
		if err != nil {
			return err
		}
		if l.live() {
			held = l
			return nil
		}
		// The row's generation is the highest ever issued, so at least
		// every generation in the records.
		nw := s.newWriter(id, l.gen+1)
		nw.report.Previous = l.status()
		gen, err := toBigint("generation", nw.gen)
		if err != nil {
			return err
		}
		// The session's cap becomes at least this holder's, which writes
		// under the larger of the two.
		var recorded int64
		if err := tx.QueryRow(ctx, `UPDATE pgstore_sessions SET generation = $2, lease_state = 'held',
			expires_at = clock_timestamp() + $3 * interval '1 microsecond', nonce = $4, host = $5, pid = $6, label = $7,
			acquired_at = clock_timestamp(), heartbeat_at = clock_timestamp(),
			max_record_bytes = GREATEST(max_record_bytes, $8) WHERE id = $1 RETURNING max_record_bytes`,
			string(id), gen, s.opts.LeaseTTL.Microseconds(), nw.nonce, s.host, s.pid, opts.Label, s.opts.MaxRecordBytes).Scan(&recorded); err != nil {
			return err
		}
		// A new holder is a change for watchers, at commit.
		if err := notify(ctx, tx, id); err != nil {
			return err
		}
		var rev int64
		if err := tx.QueryRow(ctx, `SELECT revision FROM pgstore_summaries WHERE session_id = $1`, string(id)).Scan(&rev); err != nil {
			return err
		}
		r, err := fromBigint("revision", rev)
		if err != nil {
			return err
		}
		nw.rev.Store(r)
		if nw.app, nw.resumed, err = s.resume(ctx, tx, id, r, s.writeCap(recorded)); err != nil {
			return err
		}
		w = nw
		return nil
	})
	if err != nil {
		return nil, held, err
	}
	if w != nil {
		s.startWriter(w, opts)
	}
	return w, held, nil
}

// ExpireLease makes the current holder of id lose its lease now, exactly
// as if it had stopped heartbeating for longer than the lease's TTL: its
// later Append, Heartbeat and Delete fail with sessionstore.ErrLeaseLost
// and write nothing, readers see the lease stale, and the next Acquire
// takes it over at once. It is the administrative way out of a lease whose
// holder is known to be gone, and what tests use to simulate an expiry.
// Errors: ErrNotHeld when no live holder has the lease, and those of
// Lease.
func (s *Store) ExpireLease(ctx context.Context, id session.SessionID) error {
	if err := s.readyID(ctx, id); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		l, err := lockLease(ctx, tx, id)
		if err != nil {
			return err
		}
		if !l.live() {
			return fmt.Errorf("%w: session %s", ErrNotHeld, id)
		}
		if _, err := tx.Exec(ctx, `UPDATE pgstore_sessions SET expires_at = clock_timestamp() - interval '1 microsecond' WHERE id = $1`, string(id)); err != nil {
			return err
		}
		return notify(ctx, tx, id)
	})
	if err != nil {
		if errors.Is(err, ErrNotHeld) {
			return err
		}
		return wrapErr("expire lease of", id, err)
	}
	s.wakeWaiters()
	return nil
}

// resume returns the append state of a new holder of session id, whose
// latest revision is rev: resumed from the chain that rebuilds it (the
// rows chainSQL selects, read as Load reads them), so that the holder's
// first record can be a delta. A chain that does not read or resume (a
// newer program's record, damage: Load reports it) leaves the first
// record full. max is the record cap the holder writes under.
func (s *Store) resume(ctx context.Context, tx pgx.Tx, id session.SessionID, rev uint64, max int) (*appender.Appender, *record.Rec, error) {
	app := s.newAppender(max)
	target, err := toBigint("revision", rev)
	if err != nil {
		return nil, nil, err
	}
	rows, err := tx.Query(ctx, chainSQL, string(id), target)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	rd := record.NewReader(id, readCap, record.Resumed())
	rd.Read(rowLines(id, pullRows(rows)))
	var full, last *record.Rec
	var deltas []*record.Rec
	for rd.Next() {
		r := rd.Record().Clone()
		if r.Kind == record.KindFull {
			full, deltas = r, nil
		} else {
			deltas = append(deltas, r)
		}
		last = r
	}
	var ce *sessionstore.CorruptionError
	var ne *sessionstore.NewerRecordError
	switch err := rd.Err(); {
	case errors.As(err, &ce), errors.As(err, &ne):
		return app, nil, nil
	case err != nil:
		return nil, nil, err
	}
	if app.Resume(full, deltas) != nil || last == nil || last.Through() != rev {
		return app, nil, nil // the first record is full
	}
	// The rows are not kept: the appender holds the revision as pieces.
	l := *last
	l.Payload = nil
	return app, &l, nil
}
