package fslease_test

import (
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
)

// TestKilledHolderIsStale: a holder killed with SIGKILL cannot release, but
// the kernel drops its flock when the process exits; once it has been
// reaped, TryAcquire (which never waits) gets the lease at once — no
// timeout, no heartbeat to expire — and reports the previous owner as
// stale, naming its pid.
func TestKilledHolderIsStale(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, modeHold, dirEnv+"="+dir)
	gen, _ := held(t, h)

	h.Kill(t) // returns once the process is reaped
	l, err := fslease.TryAcquire(t.Context(), dir, fslease.Options{})
	require.NoError(t, err, "the dead holder's lease is free at once")
	t.Cleanup(func() { _ = l.Release(context.Background()) })

	require.Equal(t, fslease.PrevStale, l.PreviousState())
	prev, ok := l.Previous()
	require.True(t, ok)
	require.Equal(t, h.PID(), prev.Owner.PID)
	require.False(t, prev.Released)
	require.Equal(t, gen, prev.Generation)
	require.Equal(t, gen+1, l.Generation())
}

// TestReleasedHolderIsClean: after a clean release in another process the
// next holder sees PrevReleased and the released record.
func TestReleasedHolderIsClean(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, modeAcquireOnce, dirEnv+"="+dir)
	require.Equal(t, "released 1", h.Next(t))
	require.NoError(t, h.Wait(t))

	st, err := fslease.Inspect(t.Context(), dir)
	require.NoError(t, err)
	require.Equal(t, fslease.Free, st.State)

	l := mustAcquire(t, t.Context(), dir, fslease.Options{})
	require.Equal(t, fslease.PrevReleased, l.PreviousState())
	prev, ok := l.Previous()
	require.True(t, ok)
	require.True(t, prev.Released)
	require.Equal(t, h.PID(), prev.Owner.PID)
	require.Equal(t, "helper-"+modeAcquireOnce, prev.Owner.Label)
	require.Equal(t, uint64(2), l.Generation())
}

// TestStoppedHolderKeepsLease: a holder stopped with SIGSTOP still holds
// the lock, so it still holds the lease however old its heartbeat grows.
// TryAcquire reports ErrHeld with its identity; Inspect says Held with a
// growing heartbeat age. After SIGCONT it releases normally.
func TestStoppedHolderKeepsLease(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, modeHold, dirEnv+"="+dir, hbEnv+"=5ms")
	gen, _ := held(t, h)
	h.Signal(t, syscall.SIGSTOP)

	_, err := fslease.TryAcquire(t.Context(), dir, fslease.Options{})
	require.ErrorIs(t, err, fslease.ErrHeld)
	var he *fslease.HeldError
	require.ErrorAs(t, err, &he)
	require.NotNil(t, he.Holder)
	require.Equal(t, h.PID(), he.Holder.Owner.PID)
	require.Equal(t, gen, he.Holder.Generation)
	require.Contains(t, err.Error(), "pid "+strconv.Itoa(h.PID()))

	// The heartbeat (every 5ms while running) stops with the process; the
	// age keeps growing while the state stays Held.
	first, err := fslease.Inspect(t.Context(), dir)
	require.NoError(t, err)
	require.Equal(t, fslease.Held, first.State)
	require.Eventually(t, func() bool {
		st, err := fslease.Inspect(t.Context(), dir)
		return err == nil && st.State == fslease.Held &&
			st.HeartbeatAge > 200*time.Millisecond && st.HeartbeatAge > first.HeartbeatAge
	}, 10*time.Second, 10*time.Millisecond)

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = fslease.Acquire(ctx, dir, fslease.Options{})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	h.Signal(t, syscall.SIGCONT)
	h.Stop(t)
	l := mustAcquire(t, t.Context(), dir, fslease.Options{})
	require.Equal(t, fslease.PrevReleased, l.PreviousState())
}

// TestExecedChildDoesNotHoldLease: the lock descriptor is close-on-exec,
// so a child the holder started (here `sleep 30`) keeps nothing locked
// once the holder is dead: TryAcquire gets the lease at once while the
// child still runs.
func TestExecedChildDoesNotHoldLease(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, modeHoldSpawn, dirEnv+"="+dir)
	_, rest := held(t, h)
	require.Len(t, rest, 1)
	child, err := strconv.Atoi(rest[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	h.Kill(t) // returns once the holder is reaped; the child runs on
	l, err := fslease.TryAcquire(t.Context(), dir, fslease.Options{})
	require.NoError(t, err, "the child keeps nothing locked")
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	require.Equal(t, fslease.PrevStale, l.PreviousState())
	require.NoError(t, syscall.Kill(child, 0), "the exec'd child should still run")
}

// mustAcquire acquires the lease on dir and releases it at cleanup.
func mustAcquire(t testing.TB, ctx context.Context, dir string, opts fslease.Options) *fslease.Lease {
	t.Helper()
	l, err := fslease.Acquire(ctx, dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		err := l.Release(context.Background())
		if err != nil && !errors.Is(err, fslease.ErrLost) {
			t.Errorf("release at cleanup: %v", err)
		}
	})
	return l
}
