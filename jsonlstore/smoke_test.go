package jsonlstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	s := sessiontest.New("smoke-1")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{Label: "t"})
	require.NoError(t, err)
	require.Equal(t, uint64(1), w.Generation())
	for i := range 5 {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "hi", sessiontest.Epoch)))
		rev, err := w.Append(ctx, uint64(i+1), sessiontest.Snap(t, s))
		require.NoError(t, err)
		require.Equal(t, uint64(i+2), rev)
	}
	rec, err := st.Load(ctx, "smoke-1")
	require.NoError(t, err)
	require.Equal(t, uint64(6), rec.Revision)
	require.Len(t, rec.Snapshot.Messages, 5)
	var revs []uint64
	for r, err := range st.History(ctx, "smoke-1") {
		require.NoError(t, err)
		revs = append(revs, r.Revision)
	}
	require.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, revs)
	r3, err := st.LoadRevision(ctx, "smoke-1", 3)
	require.NoError(t, err)
	require.Len(t, r3.Snapshot.Messages, 2)

	_, err = st.TryAcquire(ctx, "smoke-1", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrLeaseHeld)
	require.NoError(t, w.Release(ctx))
	w2, err := st.Acquire(ctx, "smoke-1", sessionstore.AcquireOptions{Label: "second"})
	require.NoError(t, err)
	require.Equal(t, uint64(2), w2.Generation())
	require.Equal(t, summary.LeaseFree, w2.Recovery().Previous.State)
	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, summary.LeaseHeld, page.Items[0].Lease.State)
	require.Equal(t, uint64(6), page.Items[0].Revision)
	require.NoError(t, w2.Delete(ctx))
	_, err = st.Load(ctx, "smoke-1")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}
