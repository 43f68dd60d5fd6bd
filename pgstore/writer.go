package pgstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

type writerState int

const (
	writerActive   writerState = iota
	writerReleased             // Release or Delete: ErrClosed
	writerLost                 // fenced out: ErrLeaseLost
	writerFailed               // a commit of uncertain outcome: ErrWriterFailed
)

// releaseTimeout bounds giving a lease up: Release does not take its
// caller's cancellation (a cancelled context must not leave the lease to
// expire), but it does not wait forever either.
const releaseTimeout = 10 * time.Second

// writer is the holder of one session's lease: generation gen with a
// random nonce. mu serializes its operations and guards state.
type writer struct {
	s      *Store
	id     session.SessionID
	gen    uint64
	nonce  string
	report sessionstore.RecoveryReport
	rev    atomic.Uint64

	mu    sync.Mutex
	state writerState
	hb    *heartbeater // nil until started
	// app is the writer's memory of the revision it stored last, so that
	// an append costs what changed (internal/appender); arrivals the
	// references it checked; known the content the session holds (hash →
	// size), nil until the first append of a writer that acquired the
	// session reads it; sound the part of it this writer inserted or
	// checked (blobPut): content it attaches again is sent once more, and
	// a stored row that does not hold it is replaced.
	app      *appender.Appender
	arrivals blob.Arrivals
	known    map[string]int64
	sound    map[string]int64
	search   searchMark // what the writer gave the search index last (search.go)
	// resumed is the record of the revision acquiring resumed app from,
	// until the first append (resume.go); nil when none.
	resumed *record.Rec
}

var _ sessionstore.Writer = (*writer)(nil)

func (s *Store) newWriter(id session.SessionID, gen uint64) *writer {
	return &writer{
		s: s, id: id, gen: gen, nonce: newNonce(),
		report: sessionstore.RecoveryReport{Generation: gen},
	}
}

// startWriter starts w's heartbeat, unless the store closed meanwhile
// (then the writer is closed with it).
func (s *Store) startWriter(w *writer, opts sessionstore.AcquireOptions) {
	interval := opts.HeartbeatInterval
	if interval <= 0 {
		interval = s.opts.HeartbeatInterval
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.bg.Add(1) // under s.mu, so Close's Wait counts it
	s.mu.Unlock()
	if opts.Redactor != nil && w.app != nil && w.app.Redact.Redactor() != opts.Redactor {
		w.app.Redact = redact.NewStream(opts.Redactor) // an acquisition's: nothing encoded yet
	}
	// w is not shared yet: no lock needed to set hb.
	w.hb = startHeartbeat(s.life, interval, w.Heartbeat, s.bg.Done)
}

func (w *writer) ID() session.SessionID                 { return w.id }
func (w *writer) Generation() uint64                    { return w.gen }
func (w *writer) Recovery() sessionstore.RecoveryReport { return w.report }
func (w *writer) Revision() uint64                      { return w.rev.Load() }

// usableLocked reports why the writer may not act, if it may not.
func (w *writer) usableLocked(ctx context.Context) error {
	if err := w.s.ready(context.Background()); err != nil {
		return fmt.Errorf("%w: session %s: store closed", sessionstore.ErrClosed, w.id)
	}
	switch w.state {
	case writerReleased:
		return fmt.Errorf("%w: session %s: writer released", sessionstore.ErrClosed, w.id)
	case writerLost:
		return w.lostErr()
	case writerFailed:
		return fmt.Errorf("%w: session %s: an earlier append's outcome is unknown", sessionstore.ErrWriterFailed, w.id)
	}
	return ctx.Err()
}

func (w *writer) lostErr() error {
	return fmt.Errorf("%w: session %s: generation %d was superseded or its lease expired", sessionstore.ErrLeaseLost, w.id, w.gen)
}

// errFenced reports, inside a transaction, that the lease is no longer
// this writer's.
var errFenced = errors.New("fenced")

// fence locks the session row and checks that the lease is still this
// writer's and unexpired.
func (w *writer) fence(ctx context.Context, tx pgx.Tx) error {
	l, err := lockLease(ctx, tx, w.id)
	if errors.Is(err, sessionstore.ErrNotFound) {
		return errFenced // deleted (and perhaps created again) by someone else
	}
	if err != nil {
		return err
	}
	if l.gen != w.gen || l.nonce != w.nonce || !l.live() {
		return errFenced
	}
	return nil
}

// extendSQL is the heartbeat: the lease lives LeaseTTL from now.
const extendSQL = `UPDATE pgstore_sessions SET heartbeat_at = clock_timestamp(),
	expires_at = clock_timestamp() + $2 * interval '1 microsecond' WHERE id = $1`

// Append implements sessionstore.Writer. The record, the content it
// keeps out of line, the summary, the lease's extension (an append proves
// the holder alive) and the change notification commit in one
// transaction that first locks the session row and checks the lease
// (fencing): a holder whose lease was taken over or expired writes nothing
// and gets ErrLeaseLost. The record is built from the revision this
// writer stored last: a delta of what changed, or a full record, as the
// chain policy says (internal/record). An error before the commit leaves
// nothing written and the writer usable; a failed commit has an unknown
// outcome and poisons the writer (ErrWriterFailed).
func (w *writer) Append(ctx context.Context, expected uint64, snap sessnap.Snapshot) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(ctx); err != nil {
		return 0, err
	}
	var rev uint64
	var added map[string]int64 // the content the append inserts
	built := false             // the appender remembers snap as stored
	err := w.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := w.fence(ctx, tx); err != nil {
			return err
		}
		prev, err := latestOf(ctx, tx, w.id)
		if err != nil {
			return err
		}
		// The generation of the latest record is not read: the fence
		// above proved the lease this writer's.
		m, err := record.Next(w.id, record.Meta{Rev: prev.rev, Schema: prev.schema, Time: prev.time}, expected, w.gen, w.s.opts.Now())
		if err != nil {
			return err
		}
		if prev.newer != nil {
			return opErr("append to", w.id, prev.newer)
		}
		if w.known == nil {
			// Once per holder: only the holder adds content, so what it
			// read here and what it adds is all the session holds.
			if w.known, err = heldBlobs(ctx, tx, w.id); err != nil {
				return err
			}
			w.sound = map[string]int64{}
		}
		if err := w.arrivals.Check(w.id, snap.Messages, blob.Held(w.known).Size); err != nil {
			return err
		}
		w.holdResumed(ctx, tx)
		var put func(string, []byte) error
		put, added = blobPut(ctx, tx, w.id, w.sound)
		m, line, err := w.s.encode(w.app, w.id, m, &snap, put)
		if err != nil {
			return err
		}
		built = true
		if rev, err = w.s.appendTx(ctx, tx, w.id, &snap, m, line, prev); err != nil {
			return err
		}
		w.s.indexTx(ctx, tx, &w.search, w.id, rev, &snap)
		_, err = tx.Exec(ctx, extendSQL, string(w.id), w.s.opts.LeaseTTL.Microseconds())
		return err
	})
	if err != nil {
		if built {
			// The record is not stored (or may not be): the appender's
			// memory is not the store's, and the next record is full.
			red := w.app.Redact.Redactor()
			w.app = w.s.newAppender(w.app.Max)
			w.app.Redact = redact.NewStream(red)
		}
		return 0, w.failLocked("append to", err)
	}
	maps.Copy(w.known, added)
	maps.Copy(w.sound, added)
	w.rev.Store(rev)
	w.resumed = nil
	return rev, nil
}

// failLocked classifies an operation's error and updates the state.
func (w *writer) failLocked(op string, err error) error {
	var ce *commitError
	switch {
	case errors.Is(err, errFenced):
		w.state = writerLost
		return w.lostErr()
	case errors.As(err, &ce):
		w.state = writerFailed
		return fmt.Errorf("%w: %s session %s: %w", sessionstore.ErrWriterFailed, op, w.id, ce.err)
	}
	return wrapErr(op, w.id, err)
}

// commitError is a failed COMMIT: the transaction may or may not have
// committed.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// inTx runs fn in a transaction and commits it; a failed commit is a
// *commitError.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return &commitError{err}
	}
	return nil
}

// Heartbeat implements sessionstore.Writer: it extends the lease by
// LeaseTTL from now if it is still this writer's and unexpired.
// Writers heartbeat by themselves (AcquireOptions.HeartbeatInterval, or
// Options.HeartbeatInterval); a lost lease stops that loop.
func (w *writer) Heartbeat(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(ctx); err != nil {
		return err
	}
	gen, err := toBigint("generation", w.gen)
	if err != nil {
		return wrapErr("heartbeat", w.id, err)
	}
	tag, err := w.s.pool.Exec(ctx, extendSQL+` AND generation = $3 AND nonce = $4
		AND lease_state = 'held' AND expires_at > clock_timestamp()`,
		string(w.id), w.s.opts.LeaseTTL.Microseconds(), gen, w.nonce)
	if err != nil {
		return wrapErr("heartbeat", w.id, err)
	}
	if tag.RowsAffected() == 0 {
		w.state = writerLost
		return w.lostErr()
	}
	return nil
}

// endLocked marks w released and stops its heartbeat: what Release and
// Delete both do to the writer. It is called with w.mu held and unlocks
// it: the heartbeat is stopped outside w.mu, since a beat in flight takes
// it, finds the writer released and returns.
func (w *writer) endLocked() {
	w.state = writerReleased
	hb := w.hb
	w.mu.Unlock()
	if hb != nil {
		hb.stop()
	}
}

// Delete implements sessionstore.Writer: the session's records, summary
// and lease go in one fenced transaction.
func (w *writer) Delete(ctx context.Context) error {
	w.mu.Lock()
	if err := w.usableLocked(ctx); err != nil {
		w.mu.Unlock()
		return err
	}
	err := w.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := w.fence(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM pgstore_sessions WHERE id = $1`, string(w.id)); err != nil {
			return err
		}
		return notify(ctx, tx, w.id)
	})
	if err != nil {
		err = w.failLocked("delete", err)
		w.mu.Unlock()
		return err
	}
	w.endLocked()
	w.s.wakeWaiters()
	return nil
}

// Release implements sessionstore.Writer. Releasing a writer that was
// already released, deleted, fenced out or failed does nothing and returns
// nil (there is no lease left to give up); after the store is closed it
// returns ErrClosed. The caller's cancellation is not taken: giving a
// lease up must not be skipped (it would stay held until it expires).
func (w *writer) Release(ctx context.Context) error {
	w.mu.Lock()
	if w.state != writerActive {
		w.mu.Unlock()
		return nil
	}
	w.endLocked()
	if err := w.s.ready(context.Background()); err != nil {
		return fmt.Errorf("%w: session %s: store closed", sessionstore.ErrClosed, w.id)
	}
	gen, err := toBigint("generation", w.gen)
	if err != nil {
		return wrapErr("release lease of", w.id, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	// One statement frees the lease and, if it did, notifies watchers (at
	// commit).
	_, err = w.s.pool.Exec(ctx, `WITH freed AS (UPDATE pgstore_sessions SET lease_state = 'free', expires_at = NULL
		WHERE id = $1 AND generation = $2 AND nonce = $3 AND lease_state = 'held' AND expires_at > clock_timestamp()
		RETURNING id) SELECT pg_notify($4, id) FROM freed`,
		string(w.id), gen, w.nonce, changesChannel)
	if err != nil {
		return wrapErr("release lease of", w.id, err)
	}
	w.s.wakeWaiters()
	return nil
}
