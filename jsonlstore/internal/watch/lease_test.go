package watch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// follower follows a subscription inside a synctest bubble: drain takes
// every change the subscription has to deliver (once all goroutines are
// blocked, its sender is blocked on the send if, and only if, it has one)
// and keeps them.
type follower struct {
	t   *testing.T
	sub <-chan summary.Change
	got []summary.Change
}

func (ss *simStore) follow() *follower {
	ss.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ss.t.Cleanup(cancel)
	ch, err := ss.w.Subscribe(ctx)
	require.NoError(ss.t, err)
	f := &follower{t: ss.t, sub: ch}
	f.drain()
	return f
}

// drain returns the changes delivered since the last drain.
func (f *follower) drain() []summary.Change {
	var out []summary.Change
	for {
		synctest.Wait()
		select {
		case c := <-f.sub:
			out = append(out, c)
			f.got = append(f.got, c)
		default:
			return out
		}
	}
}

// last returns the latest change of session id delivered so far.
func (f *follower) last(id session.SessionID) summary.Change {
	f.t.Helper()
	for i := len(f.got) - 1; i >= 0; i-- {
		if f.got[i].ID == id {
			return f.got[i]
		}
	}
	f.t.Fatalf("no change of session %s", id)
	return summary.Change{}
}

// TestWatchLeaseChanges: the initial state carries each session's lease;
// an acquisition, a release and a takeover (each announced by its new
// lease record) are changes, a debounce later, with the session's summary
// unchanged; so is a replaced lock file.
func TestWatchLeaseChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 3)
		ss.create("b", 1)
		gen := ss.disk.acquire("b", "agent")
		ss.startWatcher(nil)
		f := ss.follow()
		require.Equal(t, summary.LeaseFree, f.last("a").Summary.Lease.State)
		require.Equal(t, summary.LeaseHeld, f.last("b").Summary.Lease.State)
		require.Equal(t, gen, f.last("b").Summary.Lease.Generation)
		require.Equal(t, "agent", f.last("b").Summary.Lease.Holder.Label)

		steps := []struct {
			name      string
			do        func() uint64 // returns the generation to expect
			event     string
			wantState summary.LeaseState
		}{
			{"acquire", func() uint64 { return ss.disk.acquire("a", "one") }, "a/lease.json", summary.LeaseHeld},
			{"release", func() uint64 { ss.disk.release("a"); return 0 }, "a/lease.json", summary.LeaseFree},
			{"takeover", func() uint64 { return ss.disk.acquire("a", "two") }, "a/lease.json", summary.LeaseHeld},
			{"lock replaced", func() uint64 { ss.disk.die("a"); return 0 }, "a/lease.lock", summary.LeaseStale},
		}
		for _, st := range steps {
			want := st.do()
			ss.src.emit(st.event, fsnotify.Create)
			time.Sleep(debounce - time.Millisecond)
			require.Empty(t, f.drain(), "%s: nothing before the debounce", st.name)
			time.Sleep(time.Millisecond)
			got := f.drain()
			require.Len(t, got, 1, st.name)
			c := got[0]
			require.Equal(t, session.SessionID("a"), c.ID, st.name)
			require.Equal(t, st.wantState, c.Summary.Lease.State, st.name)
			if st.wantState == summary.LeaseHeld {
				require.Equal(t, want, c.Summary.Lease.Generation, st.name)
			}
			require.Equal(t, uint64(3), c.Summary.Revision, "%s: the summary is carried along", st.name)
			require.Equal(t, "a rev 3", c.Summary.Title, st.name)
		}
		require.Len(t, ss.recomputes("a"), 1, "lease changes recompute no summary")
	})
}

// TestWatchSeesDeathWithoutEvents: a holder that dies writes nothing and
// sends no event; the watcher probes the leases it saw held at every poll
// tick and shows the death within one poll interval. Leases not held are
// never probed.
func TestWatchSeesDeathWithoutEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("held", 1)
		ss.create("idle", 1)
		ss.disk.acquire("held", "doomed")
		ss.startWatcher(nil)
		f := ss.follow()
		require.Equal(t, summary.LeaseHeld, f.last("held").Summary.Lease.State)
		idle := ss.disk.inspections("idle")

		time.Sleep(ss.poll / 3) // anywhere between two ticks
		ss.disk.die("held")
		died := time.Now()
		for f.last("held").Summary.Lease.State != summary.LeaseStale {
			require.Less(t, time.Since(died), ss.poll+debounce, "the death is not seen within a poll interval")
			time.Sleep(time.Millisecond)
			f.drain()
		}
		require.Equal(t, "doomed", f.last("held").Summary.Lease.Holder.Label)
		require.Equal(t, uint64(1), f.last("held").Summary.Revision)

		// Stale is not held: no more probes; neither is the idle session
		// probed, poll after poll.
		probes := ss.disk.inspections("held")
		time.Sleep(10 * ss.poll)
		require.Empty(t, f.drain())
		require.Equal(t, probes, ss.disk.inspections("held"), "a stale lease is not probed")
		require.Equal(t, idle, ss.disk.inspections("idle"), "a free lease is not probed")
	})
}

// TestWatchHeartbeatIsNoChange: a heartbeat (a new lease record, the same
// holder) is looked at but is not a change; the next revision carries the
// holder's latest heartbeat.
func TestWatchHeartbeatIsNoChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 1)
		ss.disk.acquire("a", "agent")
		ss.startWatcher(nil)
		f := ss.follow()
		acquired := f.last("a").Summary.Lease.Holder.HeartbeatAt
		before := ss.disk.inspections("a")
		for range 5 {
			time.Sleep(ss.poll / 2)
			ss.disk.heartbeat("a")
			ss.src.emit("a/lease.json", fsnotify.Create)
		}
		time.Sleep(debounce)
		require.Empty(t, f.drain(), "heartbeats are not changes")
		require.Greater(t, ss.disk.inspections("a"), before, "each was looked at")

		ss.appendRev("a")
		ss.src.emit("a/"+logFile, fsnotify.Write)
		time.Sleep(debounce)
		got := f.drain()
		require.Len(t, got, 1)
		require.Equal(t, uint64(2), got[0].Summary.Revision)
		hb := got[0].Summary.Lease.Holder.HeartbeatAt
		require.True(t, hb.After(acquired), "the revision carries the latest heartbeat")
		require.Equal(t, acquired.Add(5*ss.poll/2), hb)
	})
}

// TestWatchLeaseWithoutEvents: where no event comes (every event lost,
// or no event source), an acquisition and a release are seen by the full
// rescans, which stat the lease record, within two poll intervals.
func TestWatchLeaseWithoutEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  func() *fakeSource
	}{
		{"silent", func() *fakeSource { s := newFakeSource(); s.silent = true; return s }},
		{"no source", func() *fakeSource { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := newSimStore(t, tc.src())
				ss.create("a", 1)
				ss.startWatcher(nil)
				f := ss.follow()
				require.Equal(t, summary.LeaseFree, f.last("a").Summary.Lease.State)
				// Just after a full rescan: the worst case.
				time.Sleep(rescanTicks*ss.poll + time.Millisecond)
				f.drain()
				gen := ss.disk.acquire("a", "quiet")
				time.Sleep(rescanTicks*ss.poll + debounce)
				f.drain()
				require.Equal(t, summary.LeaseHeld, f.last("a").Summary.Lease.State)
				require.Equal(t, gen, f.last("a").Summary.Lease.Generation)
				ss.disk.release("a")
				time.Sleep(ss.poll + debounce) // held: probed at every tick
				f.drain()
				require.Equal(t, summary.LeaseFree, f.last("a").Summary.Lease.State)
			})
		})
	}
}
