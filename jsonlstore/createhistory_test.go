package jsonlstore

import (
	"context"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// TestCreateHistoryReleased: a session created by CreateHistoryReleased
// is, to every reader, one created by CreateHistory whose writer was
// released at once: the same files, the same revisions, a free lease of
// generation 1 with the creator's released record (written once, before
// publish), the same listing, and the same report for the next holder.
func TestCreateHistoryReleased(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	opts := sessionstore.AcquireOptions{Label: "importer"}
	histories := map[session.SessionID][]sessnap.Snapshot{}
	for _, id := range []session.SessionID{"released", "writer"} {
		histories[id] = growingConversation(t, string(id), 20, 4<<10)
	}
	w, err := st.CreateHistory(ctx, snapsOf(histories["writer"]), opts)
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	created, err := st.CreateHistoryReleased(ctx, snapsOf(histories["released"]), opts)
	require.NoError(t, err)
	require.True(t, created)

	names := func(id session.SessionID) []string {
		entries, err := os.ReadDir(filepath.Join(st.Dir(), layout.SessionDir(id)))
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	require.Equal(t, names("writer"), names("released"))
	rec := readLeaseRecord(t, st, "released")
	require.True(t, rec.Released)
	require.Equal(t, uint64(1), rec.Generation)
	require.Equal(t, "importer", rec.Owner.Label)

	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	for _, id := range []session.SessionID{"released", "writer"} {
		loaded, err := st.Load(ctx, id)
		require.NoError(t, err)
		require.Equal(t, uint64(20), loaded.Revision)
		ls, err := st.Lease(ctx, id)
		require.NoError(t, err)
		require.Equal(t, summary.LeaseFree, ls.State, id)
		require.Equal(t, uint64(1), ls.Generation, id)
		require.Equal(t, "importer", ls.Holder.Label, id)
		i := slices.IndexFunc(page.Items, func(s summary.Summary) bool { return s.ID == id })
		require.GreaterOrEqual(t, i, 0, id)
		require.Equal(t, ls.State, page.Items[i].Lease.State, id)
		require.Equal(t, uint64(20), page.Items[i].Revision, id)

		w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
		require.NoError(t, err)
		rep := w.Recovery()
		require.Equal(t, uint64(2), rep.Generation, id)
		require.Equal(t, summary.LeaseFree, rep.Previous.State, id)
		require.Equal(t, uint64(1), rep.Previous.Generation, id)
		require.Equal(t, "importer", rep.Previous.Holder.Label, id)
		require.False(t, rep.Repaired(), id)
		require.NoError(t, w.Release(ctx))
	}
}

// TestCreateHistoryReleasedFails: when CreateHistoryReleased creates
// nothing it says so, and leaves nothing behind, nor a held lease.
func TestCreateHistoryReleasedFails(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	created, err := st.CreateHistoryReleased(ctx, snapsOf([]sessnap.Snapshot(nil)), sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
	require.False(t, created)

	snaps := growingConversation(t, "taken", 3, 100)
	created, err = st.CreateHistoryReleased(ctx, snapsOf(snaps), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.True(t, created)
	created, err = st.CreateHistoryReleased(ctx, snapsOf(growingConversation(t, "taken", 5, 100)), sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrExists)
	require.False(t, created)
	loaded, err := st.Load(ctx, "taken")
	require.NoError(t, err)
	require.Equal(t, uint64(3), loaded.Revision)
	requireNoSession(t, st, "never")
	w, err := st.TryAcquire(ctx, "taken", sessionstore.AcquireOptions{})
	require.NoError(t, err, "no lease is left held")
	require.NoError(t, w.Release(ctx))
}

// snapsOf yields snaps.
func snapsOf(snaps []sessnap.Snapshot) iter.Seq2[sessnap.Snapshot, error] {
	return func(yield func(sessnap.Snapshot, error) bool) {
		for _, s := range snaps {
			if !yield(s, nil) {
				return
			}
		}
	}
}

// readLeaseRecord reads session id's lease.json.
func readLeaseRecord(t *testing.T, st *Store, id session.SessionID) fslease.Record {
	t.Helper()
	st2, err := fslease.Inspect(context.Background(), filepath.Join(st.Dir(), layout.SessionDir(id)))
	require.NoError(t, err)
	require.NotNil(t, st2.Record)
	return *st2.Record
}
