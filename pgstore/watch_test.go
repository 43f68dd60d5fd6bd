package pgstore_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// A watch whose connection is killed reconnects, listens again and
// reloads: it converges to the current state, changes made while it was
// disconnected (notifications it never got) included.
func TestWatchSurvivesLostConnection(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	admin := rawConn(t, dsn)
	ch, err := s.Watch(ctx)
	require.NoError(t, err)

	view := map[session.SessionID]uint64{}
	converge := func(want map[session.SessionID]uint64) {
		t.Helper()
		timer := time.NewTimer(20 * time.Second)
		defer timer.Stop()
		for !maps.Equal(view, want) {
			select {
			case c, ok := <-ch:
				require.True(t, ok, "the watch ended")
				if c.Deleted {
					delete(view, c.ID)
				} else {
					view[c.ID] = c.Summary.Revision
				}
			case <-timer.C:
				t.Fatalf("no convergence: view %v, want %v", view, want)
			}
		}
	}
	a, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("a", "one")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	converge(map[session.SessionID]uint64{"a": 1})

	// Bursts of notifications do not cost a reconnection: the watch keeps
	// its connection between them.
	watchPID := func() int {
		t.Helper()
		var pid int
		require.NoError(t, admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, pgstore.WatchApplicationName).Scan(&pid))
		return pid
	}
	pid := watchPID()
	for range 5 {
		_, err = a.Append(ctx, a.Revision(), sessiontest.Snap(t, sessiontest.Titled("a", "burst")))
		require.NoError(t, err)
		converge(map[session.SessionID]uint64{"a": a.Revision()})
	}
	require.Equal(t, pid, watchPID())

	for round := range 3 {
		var killed int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, pgstore.WatchApplicationName).Scan(&killed))
		require.Equal(t, 1, killed, "round %d: the watch's connection", round)
		// Changes while the watch is (probably) disconnected.
		_, err = a.Append(ctx, a.Revision(), sessiontest.Snap(t, sessiontest.Titled("a", "more")))
		require.NoError(t, err)
		b, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("b", "one")), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		converge(map[session.SessionID]uint64{"a": a.Revision(), "b": 1})
		require.NoError(t, b.Delete(ctx))
		converge(map[session.SessionID]uint64{"a": a.Revision()})
	}
	require.NoError(t, a.Release(ctx))
	require.NoError(t, s.Close())
	for range ch {
		// Drain until Close closes the channel.
	}
	_, err = s.List(ctx, summary.Query{})
	require.ErrorIs(t, err, sessionstore.ErrClosed)
}

// A lease whose holder stops heartbeating expires without a write or a
// notification; the watch reads it again when it expects it to expire and
// shows it stale. A holder that keeps heartbeating, read again at each of
// its expected expiries, stays held, and its heartbeats are not changes.
func TestWatchSeesLeaseExpire(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	const ttl = time.Second
	holders := openDSN(t, dsn, pgstore.Options{LeaseTTL: ttl})
	watcher := openDSN(t, dsn, pgstore.Options{})
	silent, err := holders.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("silent", "one")), sessionstore.AcquireOptions{Label: "silent", HeartbeatInterval: time.Hour})
	require.NoError(t, err)
	defer silent.Release(ctx)
	beating, err := holders.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("beating", "one")), sessionstore.AcquireOptions{Label: "beating", HeartbeatInterval: ttl / 20})
	require.NoError(t, err)
	defer beating.Release(ctx)

	ch, err := watcher.Watch(ctx)
	require.NoError(t, err)
	last := map[session.SessionID]summary.LeaseStatus{}
	changes := map[session.SessionID]int{}
	read := func(c summary.Change, ok bool) {
		t.Helper()
		require.True(t, ok, "the watch ended")
		last[c.ID] = c.Summary.Lease
		changes[c.ID]++
	}
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for last["silent"].State != summary.LeaseStale {
		select {
		case c, ok := <-ch:
			read(c, ok)
		case <-timer.C:
			t.Fatalf("the expiry was not seen; last leases %+v", last)
		}
	}
	require.Equal(t, silent.Generation(), last["silent"].Generation)
	require.Equal(t, "silent", last["silent"].Holder.Label)

	// Past the beating holder's expected expiry: the watch reads it again
	// and finds it extended.
	past := time.NewTimer(3 * ttl)
	defer past.Stop()
	for waiting := true; waiting; {
		select {
		case c, ok := <-ch:
			read(c, ok)
		case <-past.C:
			waiting = false
		}
	}
	if err := beating.Heartbeat(ctx); err != nil {
		// A lost lease never comes back: the machine held the heartbeats
		// up for longer than the TTL, and the lease did expire.
		t.Logf("the beating holder's lease expired (%v): its changes are not checked", err)
		return
	}
	require.Equal(t, summary.LeaseHeld, last["beating"].State)
	require.Equal(t, 1, changes["beating"], "heartbeats are not changes")
}
