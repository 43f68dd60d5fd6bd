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

var watchChecks = []check{
	{"WatchStartsWithCurrentState", checkWatchInitial},
	{"WatchConvergesAndSeesDeletions", checkWatchConverges},
	{"WatchClosesOnContextCancel", checkWatchCancel},
	{"WatchClosesOnStoreClose", checkWatchStoreClose},
}

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
