package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

func checkTryAcquireHeld(f *fixture) {
	t := f.t
	w := f.createLabel(snapIn(t, "busy", session.StateIdle), "holder-label")
	_, err := f.s.TryAcquire(f.ctx, "busy", sessionstore.AcquireOptions{Label: "contender"})
	require.ErrorIs(t, err, sessionstore.ErrLeaseHeld)
	var held *sessionstore.LeaseHeldError
	require.True(t, errors.As(err, &held), "TryAcquire of a held lease must return a *LeaseHeldError, got %T", err)
	require.Equal(t, session.SessionID("busy"), held.ID)
	require.Equal(t, summary.LeaseHeld, held.Status.State)
	require.Equal(t, w.Generation(), held.Status.Generation)
	require.NotNil(t, held.Status.Holder, "the error must say who holds the lease")
	require.Equal(t, "holder-label", held.Status.Holder.Label)
	require.Contains(t, err.Error(), "holder-label")

	// The holder is unaffected.
	f.appendSteps(w, 1)
}

func checkGenerationsIncrease(f *fixture) {
	t := f.t
	w := f.create("gens")
	gens := []uint64{w.Generation()}
	writerOf := map[uint64]uint64{1: w.Generation()} // revision → writer generation
	for i := range 4 {
		require.Equal(t, w.Generation(), w.Recovery().Generation)
		rev := f.append(w, w.Revision(), stepSnap(t, "gens", i))
		writerOf[rev] = w.Generation()
		require.NoError(t, w.Release(f.ctx))
		w = f.acquire("gens", fmt.Sprintf("holder-%d", i))
		require.Greater(t, w.Generation(), gens[len(gens)-1], "acquisition %d", i+2)
		gens = append(gens, w.Generation())
	}
	var maxRecord uint64
	for _, rec := range f.history("gens") {
		require.Equal(t, writerOf[rec.Revision], rec.Generation, "revision %d must carry its writer's generation", rec.Revision)
		require.GreaterOrEqual(t, rec.Generation, maxRecord, "generations never decrease along the history")
		maxRecord = rec.Generation
	}
	require.Greater(t, w.Generation(), maxRecord, "a new holder's generation exceeds every generation in the records")
}

func checkSuperseded(f *fixture) {
	t := f.t
	w := f.create("lost")
	f.appendSteps(w, 1)
	before := f.load("lost")

	f.h.Supersede(t, f.s, "lost")

	_, err := w.Append(f.ctx, 2, stepSnap(t, "lost", 3))
	require.ErrorIs(t, err, sessionstore.ErrLeaseLost)
	_, err = w.Append(f.ctx, 2, stepSnap(t, "lost", 3))
	require.ErrorIs(t, err, sessionstore.ErrLeaseLost, "a superseded writer is done")
	require.ErrorIs(t, w.Heartbeat(f.ctx), sessionstore.ErrLeaseLost)

	after := f.load("lost")
	require.Equal(t, uint64(2), after.Revision, "a superseded writer wrote something")
	requireSameSnap(t, before.Snapshot, after.Snapshot)
	require.Len(t, f.history("lost"), 2)
}

func checkAcquireAfterSupersede(f *fixture) {
	t := f.t
	old := f.create("takeover")
	f.appendSteps(old, 1)
	f.h.Supersede(t, f.s, "takeover")
	require.Equal(t, summary.LeaseStale, f.lease("takeover").State)

	w := f.acquire("takeover", "successor")
	require.Equal(t, summary.LeaseStale, w.Recovery().Previous.State, "the previous holder lost its lease without releasing")
	require.Greater(t, w.Generation(), old.Generation())
	require.Equal(t, uint64(2), w.Revision())
	f.append(w, 2, stepSnap(t, "takeover", 3))

	// The old writer stays shut out, whatever it believes the revision is.
	for _, expected := range []uint64{2, 3} {
		_, err := old.Append(f.ctx, expected, stepSnap(t, "takeover", 9))
		require.ErrorIs(t, err, sessionstore.ErrLeaseLost)
	}
	rec := f.load("takeover")
	require.Equal(t, uint64(3), rec.Revision)
	require.Equal(t, w.Generation(), rec.Generation)
}

func checkAcquireContextDone(f *fixture) {
	t := f.t
	w := f.create("wait")
	ctx, cancel := context.WithTimeout(f.ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	var err error
	within(t, "Acquire with a done context", func() {
		_, err = f.s.Acquire(ctx, "wait", sessionstore.AcquireOptions{})
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), waitBound)

	// Cancellation (rather than a deadline) too.
	ctx2, cancel2 := context.WithCancel(f.ctx)
	stop := context.AfterFunc(ctx, cancel2) // ctx is already done: cancels at once
	defer stop()
	within(t, "Acquire with a cancelled context", func() {
		_, err = f.s.Acquire(ctx2, "wait", sessionstore.AcquireOptions{})
	})
	require.ErrorIs(t, err, context.Canceled)

	// The holder is unaffected.
	require.Equal(t, summary.LeaseHeld, f.lease("wait").State)
	f.appendSteps(w, 1)
}

func checkAcquireWaits(f *fixture) {
	t := f.t
	first := f.create("queue")
	f.appendSteps(first, 1)

	type result struct {
		w   sessionstore.Writer
		err error
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithTimeout(f.ctx, 2*waitBound)
	defer cancel()
	go func() {
		w, err := f.s.Acquire(ctx, "queue", sessionstore.AcquireOptions{Label: "second"})
		got <- result{w, err}
	}()
	// Whether the waiter is already blocked or not yet started, releasing
	// must hand it the lease.
	require.NoError(t, first.Release(f.ctx))

	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	var r result
	select {
	case r = <-got:
	case <-timer.C:
		t.Fatalf("Acquire did not get the lease within %s of its release", waitBound)
	}
	require.NoError(t, r.err)
	f.track(r.w)
	require.Greater(t, r.w.Generation(), first.Generation())
	require.Equal(t, summary.LeaseFree, r.w.Recovery().Previous.State)
	require.Equal(t, uint64(2), r.w.Revision())
	f.append(r.w, 2, stepSnap(t, "queue", 3))
}

func checkReleaseThenFree(f *fixture) {
	t := f.t
	first := f.createLabel(snapIn(t, "clean", session.StateIdle), "first")
	require.NoError(t, first.Release(f.ctx))

	w, err := f.s.TryAcquire(f.ctx, "clean", sessionstore.AcquireOptions{Label: "second"})
	require.NoError(t, err, "the lease is free after Release")
	f.track(w)
	prev := w.Recovery().Previous
	require.Equal(t, summary.LeaseFree, prev.State, "a clean release")
	require.Equal(t, first.Generation(), prev.Generation, "Previous names the last holder's generation")
	require.Equal(t, w.Generation(), w.Recovery().Generation)
	require.False(t, w.Recovery().Repaired(), "nothing to repair after a clean release")
}

func checkLeaseStatus(f *fixture) {
	t := f.t
	w := f.createLabel(snapIn(t, "status", session.StateIdle), "one")
	st := f.lease("status")
	require.Equal(t, summary.LeaseHeld, st.State)
	require.Equal(t, w.Generation(), st.Generation)
	require.NotNil(t, st.Holder)
	require.Equal(t, "one", st.Holder.Label)
	require.GreaterOrEqual(t, st.HeartbeatAge, time.Duration(0))

	require.NoError(t, w.Release(f.ctx))
	st = f.lease("status")
	require.Equal(t, summary.LeaseFree, st.State)
	require.Equal(t, w.Generation(), st.Generation, "a free lease names its last generation")

	w2 := f.acquire("status", "two")
	st = f.lease("status")
	require.Equal(t, summary.LeaseHeld, st.State)
	require.Equal(t, w2.Generation(), st.Generation)
	require.Equal(t, "two", st.Holder.Label)

	f.h.Supersede(t, f.s, "status")
	require.Equal(t, summary.LeaseStale, f.lease("status").State)

	w3 := f.acquire("status", "three")
	require.Equal(t, summary.LeaseHeld, f.lease("status").State)
	require.NoError(t, w3.Release(f.ctx))
	require.Equal(t, summary.LeaseFree, f.lease("status").State)
}

func checkHeartbeat(f *fixture) {
	t := f.t
	w := f.create("beat")
	for range 3 {
		require.NoError(t, w.Heartbeat(f.ctx))
	}
	st := f.lease("beat")
	require.Equal(t, summary.LeaseHeld, st.State)
	require.Equal(t, w.Generation(), st.Generation)
	f.appendSteps(w, 1)
}

// checkOneHolder has goroutines take turns with Acquire: never two holders
// at once, every acquisition a new generation, every append kept.
func checkOneHolder(f *fixture) {
	t := f.t
	const goroutines, turns = 4, 3
	require.NoError(t, f.create("contended").Release(f.ctx))
	require.Equal(t, summary.LeaseFree, f.lease("contended").State)

	base := stepSnap(t, "contended", 0)
	var inside atomic.Int32
	var mu sync.Mutex
	var gens []uint64
	var failures []string
	ctx, cancel := context.WithTimeout(f.ctx, 4*waitBound)
	defer cancel()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			fail := func(format string, args ...any) {
				mu.Lock()
				failures = append(failures, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			for i := range turns {
				w, err := f.s.Acquire(ctx, "contended", sessionstore.AcquireOptions{Label: fmt.Sprintf("g%d", g)})
				if err != nil {
					fail("g%d: Acquire: %v", g, err)
					return
				}
				if n := inside.Add(1); n != 1 {
					fail("g%d: %d holders at once", g, n)
				}
				mu.Lock()
				gens = append(gens, w.Generation())
				mu.Unlock()
				snap := base
				snap.Title = fmt.Sprintf("g%d-%d", g, i)
				if _, err := w.Append(ctx, w.Revision(), snap); err != nil {
					fail("g%d: Append: %v", g, err)
				}
				inside.Add(-1)
				if err := w.Release(ctx); err != nil {
					fail("g%d: Release: %v", g, err)
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, failures)
	require.Len(t, gens, goroutines*turns)
	seen := map[uint64]bool{}
	for _, g := range gens {
		require.False(t, seen[g], "generation %d issued twice", g)
		seen[g] = true
	}
	require.Equal(t, uint64(1+goroutines*turns), f.load("contended").Revision)
}

func checkAcquireSeesLatest(f *fixture) {
	t := f.t
	w := f.create("latest")
	f.appendSteps(w, 3)
	require.NoError(t, w.Release(f.ctx))
	w2 := f.acquire("latest", "next")
	require.Equal(t, uint64(4), w2.Revision())
	_, err := w2.Append(f.ctx, 1, stepSnap(t, "latest", 9))
	require.ErrorIs(t, err, sessionstore.ErrConflict)
	f.append(w2, 4, stepSnap(t, "latest", 5))
}
