package storetest

import (
	"context"
	"errors"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

func checkDelete(f *fixture) {
	t := f.t
	w := f.create("doomed")
	f.appendSteps(w, 2)
	f.create("survivor")
	require.NoError(t, w.Delete(f.ctx))

	_, err := f.s.Load(f.ctx, "doomed")
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "Load")
	_, err = f.s.LoadRevision(f.ctx, "doomed", 1)
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "LoadRevision")
	require.ErrorIs(t, historyErr(f.ctx, f.s, "doomed"), sessionstore.ErrNotFound, "History")
	_, err = f.s.Lease(f.ctx, "doomed")
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "Lease")
	_, err = f.s.TryAcquire(f.ctx, "doomed", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "TryAcquire")
	require.Equal(t, []string{"survivor"}, ids(f.listAll(summary.Query{})), "List still shows a deleted session")

	_, err = w.Append(f.ctx, 3, stepSnap(t, "doomed", 4))
	require.ErrorIs(t, err, sessionstore.ErrClosed, "Append after Delete")
	require.ErrorIs(t, w.Delete(f.ctx), sessionstore.ErrClosed, "Delete after Delete")
	require.NoError(t, w.Release(f.ctx), "Release after Delete is a no-op")

	// The ID is free again: a new session, with a history of its own.
	fresh := snapIn(t, "doomed", session.StateCompleted)
	w2 := f.createSnap(fresh)
	require.Equal(t, uint64(1), w2.Revision())
	rec := f.load("doomed")
	require.Equal(t, uint64(1), rec.Revision)
	requireSameSnap(t, fresh, rec.Snapshot)
	require.Len(t, f.history("doomed"), 1)
	_, err = w.Append(f.ctx, 1, stepSnap(t, "doomed", 9))
	require.ErrorIs(t, err, sessionstore.ErrClosed, "the deleted session's writer must not write into the new one")
	require.Equal(t, uint64(1), f.load("doomed").Revision)
}

func checkDeleteWakesWaiter(f *fixture) {
	t := f.t
	w := f.create("gone")
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(f.ctx, 2*waitBound)
	defer cancel()
	go func() {
		w2, err := f.s.Acquire(ctx, "gone", sessionstore.AcquireOptions{})
		if err == nil {
			_ = w2.Release(context.Background())
			err = errors.New("acquire of a deleted session succeeded")
		}
		errc <- err
	}()
	require.NoError(t, w.Delete(f.ctx))
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, sessionstore.ErrNotFound)
	case <-timer.C:
		t.Fatalf("a waiting Acquire did not return within %s of the session's deletion", waitBound)
	}
}

// checkCancelledContext calls every method with a context that is already
// cancelled: each returns the context's error and changes nothing.
func checkCancelledContext(f *fixture) {
	t := f.t
	w := f.create("busy")
	f.appendSteps(w, 1)
	require.NoError(t, f.create("free").Release(f.ctx))

	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	opts := sessionstore.AcquireOptions{}
	newSnap, next := snapIn(t, "new", session.StateIdle), stepSnap(t, "busy", 3)
	calls := []struct {
		name string
		call func() error
	}{
		{"Create", func() error { _, err := f.s.Create(ctx, newSnap, opts); return err }},
		{"Fork", func() error { _, err := f.s.Fork(ctx, "busy", 0, "forked", opts); return err }},
		{"Acquire", func() error { _, err := f.s.Acquire(ctx, "free", opts); return err }},
		{"Acquire held", func() error { _, err := f.s.Acquire(ctx, "busy", opts); return err }},
		{"TryAcquire", func() error { _, err := f.s.TryAcquire(ctx, "free", opts); return err }},
		{"Load", func() error { _, err := f.s.Load(ctx, "busy"); return err }},
		{"LoadRevision", func() error { _, err := f.s.LoadRevision(ctx, "busy", 1); return err }},
		{"History", func() error { return historyErr(ctx, f.s, "busy") }},
		{"List", func() error { _, err := f.s.List(ctx, summary.Query{}); return err }},
		{"Lease", func() error { _, err := f.s.Lease(ctx, "busy"); return err }},
		{"Writer.Append", func() error { _, err := w.Append(ctx, 2, next); return err }},
		{"Writer.Heartbeat", func() error { return w.Heartbeat(ctx) }},
		{"Writer.Delete", func() error { return w.Delete(ctx) }},
	}
	for _, c := range calls {
		var err error
		within(t, c.name, func() { err = c.call() })
		require.ErrorIs(t, err, context.Canceled, c.name)
	}
	// Watch may refuse, or return a channel that is closed at once.
	var ch <-chan summary.Change
	var err error
	within(t, "Watch", func() { ch, err = f.s.Watch(ctx) })
	if err != nil {
		require.ErrorIs(t, err, context.Canceled, "Watch")
	} else {
		requireClosed(t, ch, "watching with a cancelled context")
	}

	// Nothing changed.
	require.Equal(t, []string{"busy", "free"}, ids(f.listAll(summary.Query{Order: summary.OrderIDAsc})))
	require.Equal(t, uint64(2), f.load("busy").Revision)
	require.Equal(t, summary.LeaseFree, f.lease("free").State)
	require.Equal(t, summary.LeaseHeld, f.lease("busy").State)
	f.append(w, 2, stepSnap(t, "busy", 3))
}

func checkClosedStore(f *fixture) {
	t := f.t
	w := f.create("k")
	require.NoError(t, f.create("r").Release(f.ctx))
	f.close()

	opts := sessionstore.AcquireOptions{}
	newSnap, next := snapIn(t, "new", session.StateIdle), stepSnap(t, "k", 2)
	calls := []struct {
		name string
		call func() error
	}{
		{"Create", func() error { _, err := f.s.Create(f.ctx, newSnap, opts); return err }},
		{"Fork", func() error { _, err := f.s.Fork(f.ctx, "k", 0, "forked", opts); return err }},
		{"Acquire", func() error { _, err := f.s.Acquire(f.ctx, "r", opts); return err }},
		{"TryAcquire", func() error { _, err := f.s.TryAcquire(f.ctx, "r", opts); return err }},
		{"Load", func() error { _, err := f.s.Load(f.ctx, "k"); return err }},
		{"LoadRevision", func() error { _, err := f.s.LoadRevision(f.ctx, "k", 1); return err }},
		{"History", func() error { return historyErr(f.ctx, f.s, "k") }},
		{"List", func() error { _, err := f.s.List(f.ctx, summary.Query{}); return err }},
		{"Watch", func() error { _, err := f.s.Watch(f.ctx); return err }},
		{"Lease", func() error { _, err := f.s.Lease(f.ctx, "k"); return err }},
		{"Writer.Append", func() error { _, err := w.Append(f.ctx, 1, next); return err }},
		{"Writer.Heartbeat", func() error { return w.Heartbeat(f.ctx) }},
		{"Writer.Delete", func() error { return w.Delete(f.ctx) }},
	}
	for _, c := range calls {
		var err error
		within(t, c.name, func() { err = c.call() })
		require.ErrorIs(t, err, sessionstore.ErrClosed, c.name)
	}
}
