package storetest

import (
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

func checkCreateThenLoad(f *fixture) {
	t := f.t
	snap := snapIn(t, "alpha", session.StateRunning)
	w := f.createSnap(snap)
	require.Equal(t, session.SessionID("alpha"), w.ID())
	require.Equal(t, uint64(1), w.Revision())
	require.Positive(t, w.Generation())
	require.Equal(t, w.Generation(), w.Recovery().Generation)

	rec := f.load("alpha")
	require.Equal(t, session.SessionID("alpha"), rec.ID)
	require.Equal(t, uint64(1), rec.Revision)
	require.Equal(t, w.Generation(), rec.Generation)
	require.Equal(t, sessnap.SchemaVersion, rec.SchemaVersion)
	require.False(t, rec.Time.IsZero())
	require.Equal(t, time.UTC, rec.Time.Location())
	requireSameSnap(t, snap, rec.Snapshot)

	s, err := rec.Session()
	require.NoError(t, err)
	require.Equal(t, session.StateRunning, s.State())
}

func checkCreateExisting(f *fixture) {
	t := f.t
	orig := stepSnap(t, "dup", 1)
	w := f.createSnap(orig)

	other := stepSnap(t, "dup", 2)
	_, err := f.s.Create(f.ctx, other, sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrExists, "while held")

	require.NoError(t, w.Release(f.ctx))
	_, err = f.s.Create(f.ctx, other, sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrExists, "after release")

	rec := f.load("dup")
	require.Equal(t, uint64(1), rec.Revision)
	requireSameSnap(t, orig, rec.Snapshot, "a refused Create changed the session")
	require.Len(t, f.history("dup"), 1)
}

func checkCreateHoldsLease(f *fixture) {
	t := f.t
	w := f.createLabel(snapIn(t, "held", session.StateIdle), "creator")
	require.Equal(t, summary.LeaseUnknown, w.Recovery().Previous.State,
		"the creator is the first holder: there was no previous lease")
	_, err := f.s.TryAcquire(f.ctx, "held", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrLeaseHeld)
	st := f.lease("held")
	require.Equal(t, summary.LeaseHeld, st.State)
	require.Equal(t, w.Generation(), st.Generation)
}

func checkNewID(f *fixture) {
	t := f.t
	var minted []session.SessionID
	for range 200 {
		id := sessionstore.NewID()
		require.NoError(t, sessionstore.ValidateID(id), "minted ID %q", id)
		minted = append(minted, id)
	}
	require.True(t, slices.IsSorted(minted), "IDs minted in sequence must sort in creation order")
	require.Len(t, slices.Compact(slices.Clone(minted)), len(minted), "minted IDs must be unique")

	// The store accepts minted IDs, and its ID order is creation order.
	var created []string
	for range 5 {
		id := sessionstore.NewID()
		f.create(string(id))
		created = append(created, string(id))
	}
	got := f.listAll(summary.Query{Order: summary.OrderIDAsc})
	require.Equal(t, created, ids(got))
}
