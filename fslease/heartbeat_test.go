package fslease_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
)

// TestHeartbeatTicker: with HeartbeatInterval set, a goroutine rewrites
// lease.json every interval; Inspect's heartbeat age follows; Release stops
// the goroutine (synctest.Test fails if it outlives the bubble). Time is
// the bubble's fake clock: no sleeping for real.
func TestHeartbeatTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = time.Minute
		dir := t.TempDir()
		l, err := fslease.Acquire(t.Context(), dir, fslease.Options{
			HeartbeatInterval: every,
			OnHeartbeatError:  func(err error) { t.Errorf("heartbeat: %v", err) },
		})
		require.NoError(t, err)
		start := l.Record().AcquiredAt

		for i := 1; i <= 3; i++ {
			time.Sleep(every)
			synctest.Wait() // the heartbeat goroutine has written and waits again
			want := start.Add(time.Duration(i) * every)
			require.Equal(t, want, l.Record().HeartbeatAt, "tick %d", i)
			require.Equal(t, l.Record(), readLeaseJSON(t, dir))
			require.NoError(t, l.Err())
		}

		time.Sleep(every / 2)
		st, err := fslease.Inspect(t.Context(), dir)
		require.NoError(t, err)
		require.Equal(t, fslease.Held, st.State)
		require.Equal(t, every/2, st.HeartbeatAge)

		require.NoError(t, l.Release(t.Context()))
		released := l.Record()
		require.True(t, released.Released)
		time.Sleep(10 * every)
		synctest.Wait()
		require.Equal(t, released, readLeaseJSON(t, dir), "no heartbeat after Release")
	})
}

// TestHeartbeatTickerStopsWhenLost: the heartbeat goroutine reports a lost
// lease through Err and OnHeartbeatError, once, and then stops.
func TestHeartbeatTickerStopsWhenLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 10 * time.Second
		dir := t.TempDir()
		var (
			mu   sync.Mutex
			errs []error
		)
		l, err := fslease.Acquire(t.Context(), dir, fslease.Options{
			HeartbeatInterval: every,
			OnHeartbeatError: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err)
			},
		})
		require.NoError(t, err)

		tmp := filepath.Join(dir, "replacement")
		require.NoError(t, os.WriteFile(tmp, nil, 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, fslease.LockFile)))

		time.Sleep(every)
		synctest.Wait()
		require.ErrorIs(t, l.Err(), fslease.ErrLost)
		time.Sleep(5 * every)
		synctest.Wait()
		mu.Lock()
		require.Len(t, errs, 1, "the goroutine stops after a lost lease")
		require.ErrorIs(t, errs[0], fslease.ErrLost)
		mu.Unlock()
		require.ErrorIs(t, l.Release(t.Context()), fslease.ErrLost)
	})
}

// TestManualHeartbeat: Heartbeat rewrites HeartbeatAt with the lease's
// clock, and Inspect measures the age from it.
func TestManualHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		l, err := fslease.Acquire(t.Context(), dir, fslease.Options{})
		require.NoError(t, err)
		defer l.Release(t.Context())
		start := l.Record().AcquiredAt

		time.Sleep(90 * time.Second)
		require.NoError(t, l.Heartbeat(t.Context()))
		require.Equal(t, start.Add(90*time.Second), l.Record().HeartbeatAt)
		require.Equal(t, start, l.Record().AcquiredAt)
		require.Equal(t, l.Record(), readLeaseJSON(t, dir))

		time.Sleep(30 * time.Second)
		st, err := fslease.Inspect(t.Context(), dir)
		require.NoError(t, err)
		require.Equal(t, 30*time.Second, st.HeartbeatAge)
	})
}
