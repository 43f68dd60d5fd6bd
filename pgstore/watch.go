package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Watch timing.
const (
	// coalesceWindow is how long a watch keeps collecting notifications
	// after the first of a burst before it reads the changed summaries, in
	// one query.
	coalesceWindow = 5 * time.Millisecond
	// coalesceMax bounds the IDs read per query.
	coalesceMax = 512
	// reconnectMin and reconnectMax bound the backoff between attempts to
	// reconnect a watch whose connection broke.
	reconnectMin = 50 * time.Millisecond
	reconnectMax = 2 * time.Second
	// expiryMargin is how long after a held lease's expected expiry the
	// watch reads it again: a little late rather than early, when the
	// holder would still be live and the read wasted.
	expiryMargin = 10 * time.Millisecond
)

// Watch implements sessionstore.Store through LISTEN/NOTIFY. Each watch
// has a dedicated connection listening on the changes channel (every
// create, append and delete, every acquisition and release of a lease and
// ExpireLease notify it with the session ID, at commit), and a
// summary.Index of its own that holds the current state and feeds the
// returned channel: the index's subscription delivers the initial state,
// then coalesces changes per session, so a slow receiver converges to the
// latest state. Notifications are read in bursts, and the changed
// summaries are read back with their leases in one query: a notification
// is a hint, the tables are the truth. If the connection breaks, the
// watch reconnects with backoff, listens again and reloads every summary
// (deleting from the index what is gone), so it converges even across
// lost notifications.
//
// Every change carries the session's lease status. A lease that expires
// (its holder died or stopped heartbeating) writes nothing and notifies
// nobody, so the watch reads each held lease again when it expects it to
// expire (its TTL after the last heartbeat the watch saw): a dead holder's
// lease shows stale within expiryMargin of its expiry, a live holder's is
// found extended and looked at again later, one query per lease per TTL.
// Heartbeats are not changes (summary.SameLease).
func (s *Store) Watch(ctx context.Context) (<-chan summary.Change, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel) // Close ends the watch
	w := &watch{s: s, ix: summary.NewIndex(), known: map[session.SessionID]known{}, held: map[session.SessionID]time.Time{}}
	conn, err := w.connect(wctx)
	if err == nil {
		err = w.resync(wctx, conn)
		if err != nil {
			_ = conn.Close(context.Background())
		}
	}
	if err != nil {
		stop()
		cancel()
		if e := s.ready(ctx); e != nil {
			return nil, e
		}
		return nil, opErr("watch", "", err)
	}
	sub := w.ix.Subscribe(wctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		stop()
		cancel()
		_ = conn.Close(context.Background())
		w.ix.Close()
		return nil, sessionstore.ErrClosed
	}
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		defer stop()
		defer cancel()
		defer w.ix.Close() // closes the subscription's channel
		w.run(wctx, conn)
	}()
	return sub.C(), nil
}

// watch is one Watch: its index, what it published of each session, and
// when it expects the held leases to expire.
type watch struct {
	s     *Store
	ix    *summary.Index
	known map[session.SessionID]known
	held  map[session.SessionID]time.Time // by the local clock, as estimated at the last read
}

// known is what a watch published of one session.
type known struct {
	rev   uint64
	lease summary.LeaseStatus
}

// connect opens a dedicated connection and listens on the channel.
func (w *watch) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, w.s.listenCfg.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{changesChannel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// run follows notifications until ctx is done; it owns conn.
func (w *watch) run(ctx context.Context, conn *pgx.Conn) {
	defer func() { _ = conn.Close(context.Background()) }()
	for {
		ids, err := w.collect(ctx, conn)
		if err == nil && len(ids) > 0 {
			err = w.refresh(ctx, conn, ids)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			continue
		}
		// The connection broke (or a query failed): start over on a new
		// one, reloading everything, since notifications were lost.
		_ = conn.Close(context.Background())
		for backoff := reconnectMin; ; backoff = min(2*backoff, reconnectMax) {
			timer := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			if conn, err = w.connect(ctx); err != nil {
				continue
			}
			if err = w.resync(ctx, conn); err != nil {
				_ = conn.Close(context.Background())
				continue
			}
			break
		}
	}
}

// collect waits for a notification, then gathers those that follow
// within coalesceWindow: the IDs of one burst, without duplicates, and of
// the held leases due to expire by then. It returns early with only the
// latter when an expiry comes first.
func (w *watch) collect(ctx context.Context, conn *pgx.Conn) ([]session.SessionID, error) {
	wait, cancel := ctx, context.CancelFunc(func() {})
	if at, ok := w.nextExpiry(); ok {
		wait, cancel = context.WithDeadline(ctx, at)
	}
	n, err := conn.WaitForNotification(wait)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return w.expiring(time.Now(), nil, map[session.SessionID]bool{}), nil // the connection is fine
		}
		return nil, err
	}
	seen := map[session.SessionID]bool{session.SessionID(n.Payload): true}
	ids := []session.SessionID{session.SessionID(n.Payload)}
	for len(ids) < coalesceMax {
		wait, cancel := context.WithTimeout(ctx, coalesceWindow)
		n, err := conn.WaitForNotification(wait)
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				break // the burst is over; the connection is fine
			}
			return nil, err
		}
		if id := session.SessionID(n.Payload); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return w.expiring(time.Now(), ids, seen), nil
}

// nextExpiry returns when the first held lease the watch knows of is due
// to be read again.
func (w *watch) nextExpiry() (time.Time, bool) {
	var first time.Time
	for _, at := range w.held {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// expiring appends to ids (the IDs in seen) those of the held leases due
// to be read again by now, up to coalesceMax in all.
func (w *watch) expiring(now time.Time, ids []session.SessionID, seen map[session.SessionID]bool) []session.SessionID {
	for id, at := range w.held {
		if len(ids) >= coalesceMax {
			break
		}
		if !at.After(now) && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// refresh reads the current summaries and leases of ids into the index;
// an ID without a summary was deleted.
func (w *watch) refresh(ctx context.Context, conn *pgx.Conn, ids []session.SessionID) error {
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = string(id)
	}
	found, err := w.putRows(ctx, conn, summarySelect+` WHERE s.session_id = ANY($1)`, strs)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !found[id] {
			w.remove(id)
		}
	}
	return nil
}

// resync reads every summary and lease into the index and removes what is
// gone.
func (w *watch) resync(ctx context.Context, conn *pgx.Conn) error {
	found, err := w.putRows(ctx, conn, summarySelect)
	if err != nil {
		return err
	}
	for id := range w.known {
		if !found[id] {
			w.remove(id)
		}
	}
	return nil
}

// putRows runs the query sql (of summarySelect) and puts what it reads.
func (w *watch) putRows(ctx context.Context, conn *pgx.Conn, sql string, args ...any) (map[session.SessionID]bool, error) {
	// Taken before the query: a lease's expiry is then expected a little
	// early, never late (the watch finds it live and looks again).
	at := time.Now()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := map[session.SessionID]bool{}
	for rows.Next() {
		sum, l, err := scanSummary(rows)
		if err != nil {
			return found, err
		}
		found[sum.ID] = true
		w.put(sum, l, at)
	}
	return found, rows.Err()
}

// put stores sum, whose lease row l was read at about at, unless it
// changes nothing a watcher sees (the same revision, and a lease that
// differs at most in its heartbeat). A lower revision than the index holds
// means the session was deleted and created again between two looks: the
// index ignores a lower revision, so the old one is removed first.
func (w *watch) put(sum summary.Summary, l leaseRow, at time.Time) {
	if l.live() {
		w.held[sum.ID] = at.Add(l.remaining + expiryMargin)
	} else {
		delete(w.held, sum.ID)
	}
	k, had := w.known[sum.ID]
	w.known[sum.ID] = known{rev: sum.Revision, lease: sum.Lease}
	switch {
	case had && sum.Revision < k.rev:
		w.ix.Delete(sum.ID)
	case had && sum.Revision == k.rev && summary.SameLease(k.lease, sum.Lease):
		return
	}
	w.ix.Put(sum)
}

func (w *watch) remove(id session.SessionID) {
	delete(w.known, id)
	delete(w.held, id)
	w.ix.Delete(id)
}
