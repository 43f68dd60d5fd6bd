package fslease

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTouchShowsDeadHolder: a holder that dies after touching its lease
// is stale, last seen at its last touch, not at its last heartbeat. (The
// kernel releasing a dead process's lock is simulated by unlocking the
// descriptor without a release; process_test.go kills real holders.)
func TestTouchShowsDeadHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		l, err := Acquire(t.Context(), dir, Options{})
		require.NoError(t, err)
		time.Sleep(3 * TouchInterval)
		require.NoError(t, l.Touch(time.Now()))
		touched := time.Now().UTC()
		require.NoError(t, l.fl.Unlock())
		time.Sleep(time.Minute)
		st, err := Inspect(t.Context(), dir)
		require.NoError(t, err)
		require.Equal(t, Stale, st.State)
		require.Equal(t, touched, st.ActiveAt)
		require.Equal(t, time.Minute, st.HeartbeatAge)
	})
}
