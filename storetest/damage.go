package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// checkDamagedReported damages one session of three (Harness.Damage): a
// listing still lists the two others and reports the damaged one in
// Page.Unreadable, on every page, whatever the filter; reading and
// acquiring it fail with a *CorruptionError; a watcher is told it cannot
// be read. Adapters without Harness.Damage skip it.
func checkDamagedReported(f *fixture) {
	t := f.t
	if f.h.Damage == nil {
		t.Skip("the adapter has no Harness.Damage")
	}
	for _, id := range []string{"dmg-a", "dmg-b", "dmg-c"} {
		require.NoError(t, f.create(id).Release(f.ctx))
	}
	const bad = session.SessionID("dmg-b")
	f.h.Damage(t, f.s, bad)

	isBad := func(us []summary.Unreadable) {
		t.Helper()
		require.Len(t, us, 1, "the damaged session is reported: %+v", us)
		require.Equal(t, bad, us[0].ID)
		require.NotEmpty(t, us[0].Reason)
		require.ErrorIs(t, us[0].Err, sessionstore.ErrCorrupt)
	}
	page, err := f.s.List(f.ctx, summary.Query{Order: summary.OrderIDAsc, Limit: 1})
	require.NoError(t, err, "one damaged session never fails a listing")
	require.Equal(t, []string{"dmg-a"}, ids(page.Items))
	isBad(page.Unreadable)
	page, err = f.s.List(f.ctx, summary.Query{Order: summary.OrderIDAsc, Limit: 1, Cursor: page.Next})
	require.NoError(t, err)
	require.Equal(t, []string{"dmg-c"}, ids(page.Items))
	isBad(page.Unreadable)
	page, err = f.s.List(f.ctx, summary.Query{States: []session.State{session.StateFailed}})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	isBad(page.Unreadable)

	var ce *sessionstore.CorruptionError
	_, err = f.s.Load(f.ctx, bad)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, bad, ce.ID)
	_, err = f.s.TryAcquire(f.ctx, bad, sessionstore.AcquireOptions{})
	require.ErrorAs(t, err, &ce)

	ch, err := f.s.Watch(f.ctx)
	require.NoError(t, err)
	seen := map[session.SessionID]bool{}
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	for !seen[bad] || !seen["dmg-a"] || !seen["dmg-c"] {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "watch channel closed")
			switch c.ID {
			case bad:
				require.NotNil(t, c.Unreadable, "the damaged session's change says it cannot be read: %+v", c)
				require.ErrorIs(t, c.Unreadable.Err, sessionstore.ErrCorrupt)
			default:
				require.Nil(t, c.Unreadable, "%s reads", c.ID)
				require.Equal(t, c.ID, c.Summary.ID)
			}
			seen[c.ID] = true
		case <-timer.C:
			t.Fatalf("watch did not report every session within %s: %v", waitBound, seen)
		}
	}
}
