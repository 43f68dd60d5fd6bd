package storetest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// view is what a watcher knows: the latest revision of each session.
type view map[session.SessionID]uint64

func (v view) apply(c summary.Change) {
	if c.Deleted || c.Unreadable != nil {
		delete(v, c.ID) // an unreadable session has no revision to show
		return
	}
	v[c.ID] = c.Summary.Revision
}

// current is the store's state as a view, from List.
func (f *fixture) current() view {
	v := view{}
	for _, s := range f.listAll(summary.Query{Limit: summary.MaxLimit}) {
		v[s.ID] = s.Revision
	}
	return v
}

// converge reads changes into v until it equals want, failing after
// waitBound. Watch promises convergence, never a number of events.
func (f *fixture) converge(ch <-chan summary.Change, v, want view) {
	f.t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	for !maps.Equal(v, want) {
		select {
		case c, ok := <-ch:
			require.True(f.t, ok, "watch channel closed before converging; view %v, want %v", v, want)
			if !c.Deleted && c.Unreadable == nil {
				require.Equal(f.t, c.ID, c.Summary.ID, "a change's summary is its session's: %+v", c)
			}
			v.apply(c)
		case <-timer.C:
			f.t.Fatalf("watch did not converge within %s:\n view %v\n want %v", waitBound, v, want)
		}
	}
}

// requireClosed drains ch until it is closed, failing after waitBound.
func requireClosed(t *testing.T, ch <-chan summary.Change, why string) {
	t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatalf("watch channel not closed within %s of %s", waitBound, why)
		}
	}
}

func checkWatchInitial(f *fixture) {
	t := f.t
	w := f.create("w-a")
	f.appendSteps(w, 2)
	f.create("w-b")
	gone := f.create("w-gone")
	require.NoError(t, gone.Delete(f.ctx))

	ch, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	f.converge(ch, view{}, view{"w-a": 3, "w-b": 1})
}

func checkWatchConverges(f *fixture) {
	t := f.t
	pre := f.create("pre")
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	ch, err := f.s.Watch(ctx)
	require.NoError(t, err)
	v := view{}
	f.converge(ch, v, view{"pre": 1})

	// Several goroutines create, append and delete while the watcher is
	// not reading; it must still converge to the final state.
	const goroutines = 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for g := range goroutines {
		var created []sessionSnap
		for i := range 3 {
			id := session.SessionID(fmt.Sprintf("g%d-s%d", g, i))
			created = append(created, sessionSnap{snapIn(t, string(id), session.StateIdle), stepSnap(t, id, 1)})
		}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			fail := func(err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			for i, c := range created {
				w, err := f.s.Create(f.ctx, c.first, sessionstore.AcquireOptions{})
				if err != nil {
					fail(err)
					return
				}
				for n := range 3 + r.IntN(5) {
					next := c.next
					next.Title = fmt.Sprintf("n%d", n)
					if _, err := w.Append(f.ctx, w.Revision(), next); err != nil {
						fail(err)
						return
					}
				}
				if i == 1 { // one session per goroutine is deleted again
					err = w.Delete(f.ctx)
				} else {
					err = w.Release(f.ctx)
				}
				if err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)

	want := f.current()
	require.Len(t, want, 1+goroutines*2)
	for g := range goroutines {
		require.NotContains(t, want, session.SessionID(fmt.Sprintf("g%d-s1", g)))
	}
	f.converge(ch, v, want)

	// And it keeps following: a deletion of a session it has seen.
	require.NoError(t, pre.Delete(f.ctx))
	delete(want, "pre")
	f.converge(ch, v, want)
}

// sessionSnap is a session's first snapshot and a template for the next.
type sessionSnap struct {
	first, next sessnap.Snapshot
}

func checkWatchCancel(f *fixture) {
	t := f.t
	f.create("x")
	ctx, cancel := context.WithCancel(f.ctx)
	ch, err := f.s.Watch(ctx)
	require.NoError(t, err)
	cancel()
	requireClosed(t, ch, "cancelling its context")

	// The store is unaffected: a new watch works.
	ch2, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	f.converge(ch2, view{}, view{"x": 1})
}

func checkWatchStoreClose(f *fixture) {
	t := f.t
	f.create("y")
	ch, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	f.converge(ch, view{}, view{"y": 1})
	f.close()
	requireClosed(t, ch, "closing the store")
}

// leaseWant is what awaitLeases waits for of one session: a change with
// its latest revision, rev, whose lease status pred accepts.
type leaseWant struct {
	rev  uint64
	what string
	pred func(summary.LeaseStatus) bool
}

// awaitLease reads changes until the latest one for session id carries
// revision rev and a lease status that pred accepts, failing after
// waitBound, and returns that change.
func (f *fixture) awaitLease(ch <-chan summary.Change, id session.SessionID, rev uint64, what string, pred func(summary.LeaseStatus) bool) summary.Change {
	f.t.Helper()
	return f.awaitLeases(ch, map[session.SessionID]leaseWant{id: {rev, what, pred}})[id]
}

// awaitLeases reads changes until, for every session in want, one has
// arrived that satisfies it, failing after waitBound; it returns those
// changes. Changes for other sessions are read and let go. Every change of
// a session in want must carry its revision: a lease change never loses
// the session's summary.
func (f *fixture) awaitLeases(ch <-chan summary.Change, want map[session.SessionID]leaseWant) map[session.SessionID]summary.Change {
	f.t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	got := map[session.SessionID]summary.Change{}
	last := map[session.SessionID]summary.LeaseStatus{}
	for len(got) < len(want) {
		select {
		case c, ok := <-ch:
			require.True(f.t, ok, "watch channel closed before it showed %v", want)
			w, ok := want[c.ID]
			if !ok {
				continue
			}
			require.False(f.t, c.Deleted, "session %s deleted", c.ID)
			require.Nil(f.t, c.Unreadable, "session %s unreadable", c.ID)
			require.Equal(f.t, c.ID, c.Summary.ID)
			require.Equal(f.t, w.rev, c.Summary.Revision, "a change of session %s carries its summary: %+v", c.ID, c.Summary)
			last[c.ID] = c.Summary.Lease
			if w.pred(c.Summary.Lease) {
				got[c.ID] = c
			} else {
				delete(got, c.ID) // a later state replaced it
			}
		case <-timer.C:
			for id, w := range want {
				if _, ok := got[id]; !ok {
					f.t.Fatalf("watch did not show %s of session %s within %s; its last lease: %+v", w.what, id, waitBound, last[id])
				}
			}
		}
	}
	return got
}

// heldBy accepts a lease held by generation gen under label.
func heldBy(gen uint64, label string) func(summary.LeaseStatus) bool {
	return func(l summary.LeaseStatus) bool {
		return l.State == summary.LeaseHeld && l.Generation == gen && l.Holder != nil && l.Holder.Label == label
	}
}

// leaseIn accepts a lease in state st, of generation gen or later.
func leaseIn(st summary.LeaseState, gen uint64) func(summary.LeaseStatus) bool {
	return func(l summary.LeaseStatus) bool { return l.State == st && l.Generation >= gen }
}

// checkWatchLeaseInitial: the initial state carries each session's lease
// status, as Lease reports it: held (generation, holder) or free.
func checkWatchLeaseInitial(f *fixture) {
	t := f.t
	held := f.createLabel(snapIn(t, "held", session.StateIdle), "holder")
	free := f.createLabel(snapIn(t, "free", session.StateIdle), "gone")
	f.appendSteps(free, 1)
	require.NoError(t, free.Release(f.ctx))

	ch, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	got := f.awaitLeases(ch, map[session.SessionID]leaseWant{
		"held": {1, "the lease held", heldBy(held.Generation(), "holder")},
		"free": {2, "the lease free", leaseIn(summary.LeaseFree, free.Generation())},
	})
	require.Equal(t, free.Generation(), got["free"].Summary.Lease.Generation)
	require.Equal(t, "gone", got["free"].Summary.Lease.Holder.Label, "a free lease names its last holder")
}

// checkWatchRelease: a clean release is a change, with the lease free and
// the released generation; the next acquisition one with it held again.
func checkWatchRelease(f *fixture) {
	t := f.t
	w := f.createLabel(snapIn(t, "rel", session.StateIdle), "first")
	f.appendSteps(w, 1)
	ch, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	f.awaitLease(ch, "rel", 2, "the lease held", heldBy(w.Generation(), "first"))

	require.NoError(t, w.Release(f.ctx))
	c := f.awaitLease(ch, "rel", 2, "the release", leaseIn(summary.LeaseFree, w.Generation()))
	require.Equal(t, w.Generation(), c.Summary.Lease.Generation)

	next := f.acquire("rel", "second")
	f.awaitLease(ch, "rel", 2, "the next acquisition", heldBy(next.Generation(), "second"))
}

// checkWatchTakeover: a holder that lost its lease (Harness.Supersede) is
// taken over; the takeover is a change with the new holder's generation.
func checkWatchTakeover(f *fixture) {
	t := f.t
	old := f.createLabel(snapIn(t, "over", session.StateIdle), "old")
	ch, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	f.awaitLease(ch, "over", 1, "the lease held", heldBy(old.Generation(), "old"))

	f.h.Supersede(t, f.s, "over")
	w := f.acquire("over", "successor")
	require.Greater(t, w.Generation(), old.Generation())
	f.awaitLease(ch, "over", 1, "the takeover", heldBy(w.Generation(), "successor"))
	f.append(w, 1, stepSnap(t, "over", 2))
	f.awaitLease(ch, "over", 2, "the successor's append", heldBy(w.Generation(), "successor"))
}

// checkWatchDeath: a holder that dies without releasing (Harness.Crash: a
// killed process) is a change, with the lease stale, within waitBound
// and with no reader polling for it.
func checkWatchDeath(f *fixture) {
	t := f.t
	first := f.create("dies")
	f.appendSteps(first, 1)
	require.NoError(t, first.Release(f.ctx))
	ch, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	f.awaitLease(ch, "dies", 2, "the lease free", leaseIn(summary.LeaseFree, first.Generation()))

	f.h.Crash(t, f.s, "dies")
	c := f.awaitLease(ch, "dies", 2, "the holder's death", leaseIn(summary.LeaseStale, first.Generation()+1))
	require.NotNil(t, c.Summary.Lease.Holder, "a stale lease names its dead holder")

	// The next holder recovers it, and that is a change too.
	w := f.acquire("dies", "heir")
	require.Equal(t, summary.LeaseStale, w.Recovery().Previous.State)
	f.awaitLease(ch, "dies", 2, "the heir's acquisition", heldBy(w.Generation(), "heir"))
}
