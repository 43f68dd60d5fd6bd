package memstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func newStore(t *testing.T, opts memstore.Options) *memstore.Store {
	s := memstore.New(opts)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestRecordTimesNeverGoBack(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	clk := &clock{t: t0}
	s := newStore(t, memstore.Options{Now: clk.Now})
	ctx := t.Context()
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessionstore.AcquireOptions{})
	require.NoError(t, err)

	clk.Set(t0.Add(-time.Hour)) // the wall clock steps back
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.InState("a", session.StateRunning)))
	require.NoError(t, err)
	clk.Set(t0.Add(time.Minute))
	_, err = w.Append(ctx, 2, sessiontest.Snap(t, sessiontest.InState("a", session.StateCompleted)))
	require.NoError(t, err)

	var times []time.Time
	for rec, err := range s.History(ctx, "a") {
		require.NoError(t, err)
		require.Equal(t, time.UTC, rec.Time.Location())
		times = append(times, rec.Time)
	}
	require.Len(t, times, 3)
	require.True(t, times[0].Equal(t0))
	require.True(t, times[1].Equal(t0), "a record is never earlier than the previous one")
	require.True(t, times[2].Equal(t0.Add(time.Minute)))
}

func TestLeaseIdentity(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := &clock{t: t0}
	s := newStore(t, memstore.Options{Now: clk.Now})
	ctx := t.Context()
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessionstore.AcquireOptions{Label: "agent"})
	require.NoError(t, err)

	clk.Set(t0.Add(3 * time.Second))
	st, err := s.Lease(ctx, "a")
	require.NoError(t, err)
	host, _ := os.Hostname()
	require.Equal(t, summary.LeaseStatus{
		State:      summary.LeaseHeld,
		Generation: 1,
		Holder: &summary.Holder{
			Host: host, PID: os.Getpid(), Label: "agent", AcquiredAt: t0, HeartbeatAt: t0,
		},
		HeartbeatAge: 3 * time.Second,
	}, st)

	require.NoError(t, w.Heartbeat(ctx))
	clk.Set(t0.Add(5 * time.Second))
	st, err = s.Lease(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, st.HeartbeatAge)
	require.Equal(t, t0.Add(3*time.Second), st.Holder.HeartbeatAt)

	// Mutating the returned holder changes nothing.
	st.Holder.Label = "mutated"
	st, err = s.Lease(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "agent", st.Holder.Label)

	// After release the last holder is still named.
	require.NoError(t, w.Release(ctx))
	st, err = s.Lease(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseFree, st.State)
	require.Equal(t, "agent", st.Holder.Label)
	require.Zero(t, st.HeartbeatAge)
}

// TestAppendCountsAsHeartbeat: a holder that appends but never
// heartbeats shows as active at its latest append.
func TestAppendCountsAsHeartbeat(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := &clock{t: t0}
	s := newStore(t, memstore.Options{Now: clk.Now})
	ctx := t.Context()
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	clk.Set(t0.Add(time.Minute))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.InState("a", session.StateRunning)))
	require.NoError(t, err)
	clk.Set(t0.Add(time.Minute + 2*time.Second))
	st, err := s.Lease(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, st.HeartbeatAge)
	require.Equal(t, t0.Add(time.Minute), st.Holder.HeartbeatAt)
	page, err := s.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, page.Items[0].Lease.HeartbeatAge)
}

func TestMaxRecordBytes(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		wantErr error
	}{
		{"default fits", 0, nil},
		{"small cap", 200, sessionstore.ErrTooLarge},
		{"exact cap", -1, nil}, // -1: the snapshot's own size
	}
	snap := sessiontest.Snap(t, sessiontest.InState("a", session.StateAwaiting))
	enc, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			capBytes := tt.max
			if capBytes < 0 {
				capBytes = len(enc)
			}
			s := newStore(t, memstore.Options{MaxRecordBytes: capBytes})
			w, err := s.Create(t.Context(), snap, sessionstore.AcquireOptions{})
			require.ErrorIs(t, err, tt.wantErr)
			if err == nil {
				require.NoError(t, w.Release(t.Context()))
			}
		})
	}
}

// TestSizes: a summary's LogBytes is the bytes of the session's record
// lines, as DiskUsage reports them, growing with every revision.
func TestSizes(t *testing.T) {
	s := newStore(t, memstore.Options{})
	ctx := t.Context()
	snaps := []sessnap.Snapshot{sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessiontest.Snap(t, sessiontest.InState("a", session.StateRunning)), sessiontest.Snap(t, sessiontest.InState("a", session.StateFailed))}
	var w sessionstore.Writer
	var prev int64
	for i, snap := range snaps {
		var err error
		if i == 0 {
			w, err = s.Create(ctx, snap, sessionstore.AcquireOptions{})
		} else {
			_, err = w.Append(ctx, uint64(i), snap)
		}
		require.NoError(t, err)
		p, err := s.List(ctx, summary.Query{})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		du, err := s.DiskUsage(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, summary.Sizes{LogBytes: du.Sessions[0].LogBytes}, p.Items[0].Sizes)
		require.Greater(t, du.Sessions[0].LogBytes, prev)
		require.Equal(t, du.Sessions[0].LogBytes, du.Sessions[0].TotalBytes, "no content kept out of line")
		prev = du.Sessions[0].LogBytes
	}
}

func TestSupersede(t *testing.T) {
	tests := []struct {
		name    string
		id      session.SessionID
		prepare func(t *testing.T, s *memstore.Store)
		wantErr error
	}{
		{"held", "a", nil, nil},
		{"not held", "b", nil, memstore.ErrNotHeld},
		{"twice", "a", func(t *testing.T, s *memstore.Store) { require.NoError(t, s.Supersede(t.Context(), "a")) }, memstore.ErrNotHeld},
		{"unknown", "nobody", nil, sessionstore.ErrNotFound},
		{"invalid", "../a", nil, sessionstore.ErrInvalidID},
		{"closed", "a", func(t *testing.T, s *memstore.Store) { require.NoError(t, s.Close()) }, sessionstore.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, memstore.Options{})
			ctx := t.Context()
			_, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			wb, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("b", session.StateIdle)), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, wb.Release(ctx))
			if tt.prepare != nil {
				tt.prepare(t, s)
			}
			err = s.Supersede(ctx, tt.id)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			if msg := err.Error(); errors.Is(tt.wantErr, memstore.ErrNotHeld) {
				require.True(t, strings.HasPrefix(msg, "memstore: "), msg)
				require.Contains(t, msg, string(tt.id))
			}
		})
	}
}

func TestSupersededWriterRelease(t *testing.T) {
	s := newStore(t, memstore.Options{})
	ctx := t.Context()
	old, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Supersede(ctx, "a"))
	next, err := s.TryAcquire(ctx, "a", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	// The superseded writer's Release must not free the successor's lease.
	require.NoError(t, old.Release(ctx))
	st, err := s.Lease(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseHeld, st.State)
	require.Equal(t, next.Generation(), st.Generation)
	require.ErrorIs(t, old.Delete(ctx), sessionstore.ErrLeaseLost)
	_, err = s.Load(ctx, "a")
	require.NoError(t, err)
}

func TestErrorMessages(t *testing.T) {
	s := newStore(t, memstore.Options{})
	ctx := t.Context()
	_, err := s.Load(ctx, "missing-one")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	require.Contains(t, err.Error(), "missing-one")

	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	_, err = w.Append(ctx, 7, sessiontest.Snap(t, sessiontest.InState("a", session.StateRunning)))
	require.ErrorIs(t, err, sessionstore.ErrConflict)
	require.Contains(t, err.Error(), "session a")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Acquire(cctx, "a", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, strings.HasPrefix(err.Error(), "memstore: acquire a: "), err.Error())
	var oe *sessionstore.OpError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, session.SessionID("a"), oe.ID)
}

func TestCloseWithOpenWatchesAndWriters(t *testing.T) {
	s := memstore.New(memstore.Options{})
	ctx := t.Context()
	w, err := s.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	var chans []<-chan summary.Change
	for range 3 {
		ch, err := s.Watch(ctx) // never cancelled: Close must end them
		require.NoError(t, err)
		chans = append(chans, ch)
	}
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	for _, ch := range chans {
		for range ch { // ends when closed
		}
	}
	require.ErrorIs(t, w.Release(ctx), sessionstore.ErrClosed)
	require.NoError(t, w.Release(ctx), "a second Release does nothing")
	// goleak (TestMain) checks that no watch goroutine is left.
}
