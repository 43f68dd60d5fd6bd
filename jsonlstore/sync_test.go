package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// bkTitles is every revision of session id in st by its title (the
// plSnapshot titles name the session, revision and variant written).
func bkTitles(t *testing.T, st *Store, id session.SessionID) []string {
	t.Helper()
	var out []string
	for rec, err := range st.History(context.Background(), id) {
		require.NoError(t, err)
		require.Equal(t, uint64(len(out)+1), rec.Revision)
		out = append(out, rec.Snapshot.Title)
	}
	return out
}

// syncFixture makes store A with n sessions, B as `cp -r` of A, then
// appends on both sides to the first both sessions (different content on
// each), on A only to the next one, on B only to the next one, and adds a
// new session on each side ("na", "nb").
func syncFixture(t *testing.T, n, both, one int) (a, b *Store) {
	t.Helper()
	a = openTestStoreWith(t, Options{BlobThreshold: 1024})
	for i := range n {
		bkGrow(t, a, session.SessionID(fmt.Sprintf("s%04d", i)), 3+i%4, 0)
	}
	dirB := filepath.Join(t.TempDir(), "b")
	require.NoError(t, os.CopyFS(dirB, os.DirFS(a.Dir())))
	b, err := Open(dirB, Options{BlobThreshold: 1024})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	verifyAtCleanup(t, b)
	for i := range both + 2*one {
		id := session.SessionID(fmt.Sprintf("s%04d", i))
		switch {
		case i < both:
			bkGrow(t, a, id, 2, 1)
			bkGrow(t, b, id, 1+i%3, 2)
		case i < both+one:
			bkGrow(t, a, id, 2, 1)
		default:
			bkGrow(t, b, id, 2, 2)
		}
	}
	bkGrow(t, a, "na", 4, 1)
	bkGrow(t, b, "nb", 4, 2)
	return a, b
}

// TestSyncUnion: after a sync of two stores that share their sessions (B
// a `cp -r` of A) and were then changed apart, every revision of either
// side is on both (as the session itself or as a fork of it), what was
// appended on one side only is on the other byte for byte, both stores
// verify, and a second sync changes nothing.
func TestSyncUnion(t *testing.T) {
	const n, both, one = 40, 8, 5
	syncUnion(t, n, both, one)
}

// TestSyncUnionLarge is the target's size: two 1,000-session stores with
// 100 sessions appended on both sides (set SESSIONSTORE_SYNC_LARGE=1).
func TestSyncUnionLarge(t *testing.T) {
	if os.Getenv("SESSIONSTORE_SYNC_LARGE") == "" {
		t.Skip("set SESSIONSTORE_SYNC_LARGE=1: two 1,000-session stores")
	}
	syncUnion(t, 1000, 100, 50)
}

func syncUnion(t *testing.T, n, both, one int) {
	ctx := t.Context()
	a, b := syncFixture(t, n, both, one)
	wantA, wantB := map[session.SessionID][]string{}, map[session.SessionID][]string{}
	for i := range n {
		id := session.SessionID(fmt.Sprintf("s%04d", i))
		wantA[id], wantB[id] = bkTitles(t, a, id), bkTitles(t, b, id)
	}
	wantA["na"], wantB["nb"] = bkTitles(t, a, "na"), bkTitles(t, b, "nb")

	rep, err := a.Sync(ctx, b.Dir(), maintenance.SyncOptions{})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Empty(t, rep.Skipped)
	require.Len(t, rep.Forks, 2*both)
	require.Len(t, rep.ToA, one+1, "appended on B only, and nb")
	require.Len(t, rep.ToB, one+1, "appended on A only, and na")

	forks := map[string]maintenance.SyncFork{}
	for _, f := range rep.Forks {
		forks[f.In+"/"+string(f.ID)] = f
	}
	for i := range n {
		id := session.SessionID(fmt.Sprintf("s%04d", i))
		if i >= both {
			require.Equal(t, bkRevisions(t, a, id), bkRevisions(t, b, id), "session %s", id)
			continue
		}
		// Each side keeps its own, and gets the other's as a fork.
		require.Equal(t, wantA[id], bkTitles(t, a, id))
		require.Equal(t, wantB[id], bkTitles(t, b, id))
		fa, fb := forks["a/"+string(id)], forks["b/"+string(id)]
		require.Equal(t, wantB[id], bkTitles(t, a, fa.Fork), "B's branch of %s in A", id)
		require.Equal(t, wantA[id], bkTitles(t, b, fb.Fork), "A's branch of %s in B", id)
		orig := uint64(3 + i%4)
		require.Equal(t, orig, fa.DivergedAt)
		require.Equal(t, orig, fb.DivergedAt)
		rec, err := a.Load(ctx, fa.Fork)
		require.NoError(t, err)
		require.Equal(t, id, rec.Snapshot.Relationship.ParentID)
		require.Equal(t, string(id), rec.Snapshot.Labels[maintenance.SyncDivergedFrom])
		require.Equal(t, strconv.FormatUint(orig, 10), rec.Snapshot.Labels[maintenance.SyncDivergedAt])
	}
	require.Equal(t, wantA["na"], bkTitles(t, b, "na"))
	require.Equal(t, wantB["nb"], bkTitles(t, a, "nb"))
	for _, st := range []*Store{a, b} {
		v, err := st.Verify(ctx)
		require.NoError(t, err)
		require.True(t, v.OK(), "%+v", v)
	}

	again, err := a.Sync(ctx, b.Dir(), maintenance.SyncOptions{})
	require.NoError(t, err)
	require.False(t, again.Changed(), "a second sync changes nothing: %+v", again)
	again, err = b.Sync(ctx, a.Dir(), maintenance.SyncOptions{})
	require.NoError(t, err)
	require.False(t, again.Changed(), "nor one the other way: %+v", again)
}

// TestSyncSkipsHeld: a session a live writer holds on either side is
// skipped and reported; the others sync.
func TestSyncSkipsHeld(t *testing.T) {
	ctx := t.Context()
	a, b := syncFixture(t, 4, 0, 2)
	w, err := b.Acquire(ctx, "s0003", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rep, err := a.Sync(ctx, b.Dir(), maintenance.SyncOptions{})
	require.NoError(t, err)
	require.Equal(t, "held by a live writer in b", rep.Skipped["s0003"])
	require.Len(t, rep.ToB, 3, "s0000, s0001 appended on A, and na")
	require.NoError(t, w.Release(ctx))
	rep, err = a.Sync(ctx, b.Dir(), maintenance.SyncOptions{})
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.Len(t, rep.ToA, 1)
	require.Equal(t, bkRevisions(t, a, "s0003"), bkRevisions(t, b, "s0003"))
}
