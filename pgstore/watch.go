package pgstore

import (
	"context"
	"errors"
	"fmt"
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
)

// Watch implements sessionstore.Store through LISTEN/NOTIFY. Each watch
// has a dedicated connection listening on the changes channel (every
// create, append and delete notifies it with the session ID, at commit),
// and a summary.Index of its own that holds the current state and feeds
// the returned channel: the index's subscription delivers the initial
// state, then coalesces changes per session, so a slow receiver converges
// to the latest state. Notifications are read in bursts, and the changed
// summaries are read back in one query: a notification is a hint, the
// table is the truth. If the connection breaks, the watch reconnects with
// backoff, listens again and reloads every summary (deleting from the
// index what is gone), so it converges even across lost notifications.
// The summaries carry no lease status (LeaseUnknown), as in memstore:
// acquiring or releasing is not a change.
func (s *Store) Watch(ctx context.Context) (<-chan summary.Change, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel) // Close ends the watch
	w := &watch{s: s, ix: summary.NewIndex(), known: map[session.SessionID]uint64{}}
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
		return nil, fmt.Errorf("pgstore: watch: %w", err)
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

// watch is one Watch: its index and the revision of each session in it.
type watch struct {
	s     *Store
	ix    *summary.Index
	known map[session.SessionID]uint64
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
// within coalesceWindow: the IDs of one burst, without duplicates.
func (w *watch) collect(ctx context.Context, conn *pgx.Conn) ([]session.SessionID, error) {
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
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
	return ids, nil
}

// refresh reads the current summaries of ids into the index; an ID
// without a summary was deleted.
func (w *watch) refresh(ctx context.Context, conn *pgx.Conn, ids []session.SessionID) error {
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = string(id)
	}
	rows, err := conn.Query(ctx, `SELECT doc FROM pgstore_summaries WHERE session_id = ANY($1)`, strs)
	if err != nil {
		return err
	}
	found, err := w.putRows(rows)
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

// resync reads every summary into the index and removes what is gone.
func (w *watch) resync(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT doc FROM pgstore_summaries`)
	if err != nil {
		return err
	}
	found, err := w.putRows(rows)
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

func (w *watch) putRows(rows pgx.Rows) (map[session.SessionID]bool, error) {
	found := map[session.SessionID]bool{}
	var doc []byte
	_, err := pgx.ForEachRow(rows, []any{&doc}, func() error {
		sum, err := decodeSummary(doc)
		if err != nil {
			return err
		}
		found[sum.ID] = true
		w.put(sum)
		return nil
	})
	return found, err
}

// put stores sum. A lower revision than the index holds means the session
// was deleted and created again between two looks: the index ignores a
// lower revision, so the old one is removed first.
func (w *watch) put(sum summary.Summary) {
	if rev, ok := w.known[sum.ID]; ok && sum.Revision < rev {
		w.ix.Delete(sum.ID)
	}
	w.known[sum.ID] = sum.Revision
	w.ix.Put(sum)
}

func (w *watch) remove(id session.SessionID) {
	delete(w.known, id)
	w.ix.Delete(id)
}
