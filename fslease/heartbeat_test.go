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

// TestTouch: Touch sets lease.lock's modification time only when the
// holder's latest heartbeat or touch is at least TouchInterval old, and
// never writes lease.json; Inspect takes the later of the two as the
// holder's last sign of life, however many writes the holder reports.
func TestTouch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		l, err := fslease.Acquire(t.Context(), dir, fslease.Options{})
		require.NoError(t, err)
		start := l.Record().AcquiredAt
		stat := func(name string) os.FileInfo {
			fi, err := os.Stat(filepath.Join(dir, name))
			require.NoError(t, err)
			return fi
		}
		record := stat(fslease.RecordFile)
		lockTime := stat(fslease.LockFile).ModTime()

		// Ten writes a second for three seconds.
		for i := 1; i <= 30; i++ {
			time.Sleep(fslease.TouchInterval / 10)
			require.NoError(t, l.Touch(time.Now()))
			now := start.Add(time.Duration(i) * fslease.TouchInterval / 10)
			active := start.Add(now.Sub(start).Truncate(fslease.TouchInterval))
			if i%10 == 0 {
				require.True(t, stat(fslease.LockFile).ModTime().Equal(now), "touch %d did not touch lease.lock", i)
				lockTime = now
			} else {
				require.True(t, stat(fslease.LockFile).ModTime().Equal(lockTime), "touch %d touched lease.lock within the interval", i)
			}
			require.True(t, os.SameFile(record, stat(fslease.RecordFile)), "touch %d rewrote lease.json", i)
			require.Equal(t, start, l.Record().HeartbeatAt, "the record is left alone")
			st, err := fslease.Inspect(t.Context(), dir)
			require.NoError(t, err)
			require.Equal(t, fslease.Held, st.State)
			require.Equal(t, active, st.ActiveAt, "touch %d", i)
			require.Equal(t, now.Sub(active), st.HeartbeatAge, "touch %d", i)
		}

		// A heartbeat counts as a sign of life too: the next touch waits a
		// whole interval after it.
		time.Sleep(fslease.TouchInterval / 2)
		require.NoError(t, l.Heartbeat(t.Context()))
		beat := l.Record().HeartbeatAt
		time.Sleep(fslease.TouchInterval / 2)
		require.NoError(t, l.Touch(time.Now()))
		require.True(t, stat(fslease.LockFile).ModTime().Equal(lockTime), "touched within the interval after a heartbeat")
		st, err := fslease.Inspect(t.Context(), dir)
		require.NoError(t, err)
		require.Equal(t, beat, st.ActiveAt)

		// Fencing: a lost lease touches nothing.
		time.Sleep(fslease.TouchInterval)
		tmp := filepath.Join(dir, "replacement")
		require.NoError(t, os.WriteFile(tmp, nil, 0o600))
		require.NoError(t, os.Chtimes(tmp, start, start))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, fslease.LockFile)))
		require.ErrorIs(t, l.Touch(time.Now()), fslease.ErrLost)
		require.True(t, stat(fslease.LockFile).ModTime().Equal(start))
		require.ErrorIs(t, l.Release(t.Context()), fslease.ErrLost)
	})
}

// TestTouchAfterRelease: a released lease is not touched, even within the
// interval, and Inspect shows the release time as the last sign of life.
func TestTouchAfterRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		l, err := fslease.Acquire(t.Context(), dir, fslease.Options{})
		require.NoError(t, err)
		time.Sleep(2 * fslease.TouchInterval)
		require.NoError(t, l.Touch(time.Now()))
		time.Sleep(2 * fslease.TouchInterval)
		require.NoError(t, l.Release(t.Context()))
		released := l.Record().HeartbeatAt
		require.ErrorIs(t, l.Touch(time.Now()), fslease.ErrReleased)
		time.Sleep(2 * fslease.TouchInterval)
		require.ErrorIs(t, l.Touch(time.Now()), fslease.ErrReleased)
		st, err := fslease.Inspect(t.Context(), dir)
		require.NoError(t, err)
		require.Equal(t, fslease.Free, st.State)
		require.Equal(t, released, st.ActiveAt)
	})
}

// TestTouchIgnoresFutureLockTime: a lock file's time in the future (left
// by another clock) is not taken for a sign of life.
func TestTouchIgnoresFutureLockTime(t *testing.T) {
	dir := t.TempDir()
	l, err := fslease.Acquire(t.Context(), dir, fslease.Options{})
	require.NoError(t, err)
	defer l.Release(t.Context())
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, fslease.LockFile), future, future))
	st, err := fslease.Inspect(t.Context(), dir)
	require.NoError(t, err)
	require.Equal(t, l.Record().HeartbeatAt, st.ActiveAt)
}
