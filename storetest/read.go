package storetest

import (
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

func checkHistory(f *fixture) {
	t := f.t
	first := snapIn(t, "hist", session.StateIdle)
	w := f.createSnap(first)
	want := append([]string{encode(t, first)}, encodeAll(f, f.appendSteps(w, 7))...)
	// Another session's appends do not leak in.
	f.appendSteps(f.create("other"), 2)

	hist := f.history("hist")
	require.Len(t, hist, len(want))
	for i, rec := range hist {
		require.Equal(t, uint64(i+1), rec.Revision)
		require.Equal(t, session.SessionID("hist"), rec.ID)
		require.Equal(t, want[i], encode(t, rec.Snapshot), "revision %d", rec.Revision)
	}

	// Stopping early is allowed.
	n := 0
	for _, err := range f.s.History(f.ctx, "hist") {
		require.NoError(t, err)
		n++
		if n == 3 {
			break
		}
	}
	require.Equal(t, 3, n)
}

func encodeAll(f *fixture, snaps []sessnap.Snapshot) []string {
	out := make([]string, len(snaps))
	for i, s := range snaps {
		out[i] = encode(f.t, s)
	}
	return out
}

func checkLoadRevision(f *fixture) {
	t := f.t
	first := snapIn(t, "revs", session.StateIdle)
	w := f.createSnap(first)
	snaps := append([]sessnap.Snapshot{first}, f.appendSteps(w, 4)...)
	for i, want := range snaps {
		rev := uint64(i + 1)
		rec, err := f.s.LoadRevision(f.ctx, "revs", rev)
		require.NoError(t, err, "revision %d", rev)
		require.Equal(t, rev, rec.Revision)
		require.Equal(t, w.Generation(), rec.Generation)
		requireSameSnap(t, want, rec.Snapshot, "revision %d", rev)
	}
	for _, rev := range []uint64{0, 6, 1000} {
		_, err := f.s.LoadRevision(f.ctx, "revs", rev)
		require.ErrorIs(t, err, sessionstore.ErrNotFound, "revision %d of 5", rev)
	}
	latest := f.load("revs")
	require.Equal(t, uint64(5), latest.Revision)
	requireSameSnap(t, snaps[4], latest.Snapshot)
}

func checkLoadAfterRelease(f *fixture) {
	t := f.t
	w := f.create("after")
	snaps := f.appendSteps(w, 2)
	require.NoError(t, w.Release(f.ctx))
	rec := f.load("after")
	require.Equal(t, uint64(3), rec.Revision)
	requireSameSnap(t, snaps[1], rec.Snapshot)
	require.Len(t, f.history("after"), 3)
	st := f.lease("after")
	require.Equal(t, summary.LeaseFree, st.State)

	// And while someone else holds it: reading needs no lease.
	f.acquire("after", "other")
	require.Equal(t, uint64(3), f.load("after").Revision)
}

func checkLoadCopies(f *fixture) {
	t := f.t
	snap := richSnap(t, "copies")
	want := encode(t, snap)
	f.createSnap(snap)

	rec := f.load("copies")
	require.Equal(t, want, encode(t, rec.Snapshot))
	mutate(&rec.Snapshot)
	require.Equal(t, want, encode(t, f.load("copies").Snapshot), "mutating a loaded record changed the store")

	rec1, err := f.s.LoadRevision(f.ctx, "copies", 1)
	require.NoError(t, err)
	mutate(&rec1.Snapshot)
	rec2, err := f.s.LoadRevision(f.ctx, "copies", 1)
	require.NoError(t, err)
	require.Equal(t, want, encode(t, rec2.Snapshot), "mutating a LoadRevision record changed the store")

	// A restored session does not alias the store either.
	s, err := f.load("copies").Session()
	require.NoError(t, err)
	require.NoError(t, s.ResolveApproval(false))
	require.Equal(t, want, encode(t, f.load("copies").Snapshot))
}

func checkHistoryCopies(f *fixture) {
	t := f.t
	w := f.createSnap(richSnap(t, "hcopies"))
	f.append(w, 1, richSnap(t, "hcopies"))
	want := encode(t, richSnap(t, "hcopies"))
	for _, rec := range f.history("hcopies") {
		mutate(&rec.Snapshot)
	}
	for _, rec := range f.history("hcopies") {
		require.Equal(t, want, encode(t, rec.Snapshot), "mutating a History record changed revision %d", rec.Revision)
	}
}

func checkForkRevision(f *fixture) {
	t := f.t
	src := f.create("source")
	snaps := f.appendSteps(src, 2) // revisions 2 and 3
	require.NoError(t, src.Release(f.ctx))

	w, err := f.s.Fork(f.ctx, "source", 2, "child", sessionstore.AcquireOptions{Label: "forker"})
	require.NoError(t, err)
	f.track(w)
	require.Equal(t, session.SessionID("child"), w.ID())
	require.Equal(t, uint64(1), w.Revision())
	_, err = f.s.TryAcquire(f.ctx, "child", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrLeaseHeld, "Fork returns the holder of the new session")

	rec := f.load("child")
	require.Equal(t, uint64(1), rec.Revision)
	require.Equal(t, session.SessionID("child"), rec.Snapshot.ID)
	require.Equal(t, session.SessionID("source"), rec.Snapshot.Relationship.ParentID)
	require.Equal(t, session.SessionID("source"), rec.Snapshot.Relationship.RootID)
	requireSameSnap(t, adapter.ForkSnapshot(snaps[0], "child"), rec.Snapshot,
		"revision 1 of a fork is the source revision with its ID and relationship replaced")
	_, err = rec.Session()
	require.NoError(t, err)

	// The source is untouched, and the fork is independent of it.
	require.Equal(t, uint64(3), f.load("source").Revision)
	f.append(w, 1, stepSnap(t, "child", 2))
	require.Equal(t, uint64(3), f.load("source").Revision)
	requireSameSnap(t, snaps[1], f.load("source").Snapshot)
}

func checkForkRoot(f *fixture) {
	t := f.t
	f.create("root")
	f.fork("root", 1, "kid")
	f.fork("kid", 0, "grandkid")
	rel := f.load("grandkid").Snapshot.Relationship
	require.Equal(t, session.SessionID("kid"), rel.ParentID)
	require.Equal(t, session.SessionID("root"), rel.RootID, "the root is the root of the whole family")
}

func checkForkLatest(f *fixture) {
	t := f.t
	src := f.create("src")
	snaps := f.appendSteps(src, 3)
	f.fork("src", 0, "copy")
	requireSameSnap(t, adapter.ForkSnapshot(snaps[2], "copy"), f.load("copy").Snapshot)
}

func checkForkMints(f *fixture) {
	t := f.t
	f.create("parent")
	w := f.fork("parent", 0, "")
	require.NotEmpty(t, w.ID())
	require.NotEqual(t, session.SessionID("parent"), w.ID())
	require.NoError(t, sessionstore.ValidateID(w.ID()))
	rec := f.load(w.ID())
	require.Equal(t, w.ID(), rec.Snapshot.ID)
	require.Equal(t, session.SessionID("parent"), rec.Snapshot.Relationship.ParentID)
}

func checkForkErrors(f *fixture) {
	t := f.t
	f.create("exists")
	f.create("taken")
	tests := []struct {
		name  string
		from  session.SessionID
		rev   uint64
		newID session.SessionID
		want  error
	}{
		{"unknown source", "nobody", 0, "f1", sessionstore.ErrNotFound},
		{"unknown revision", "exists", 2, "f2", sessionstore.ErrNotFound},
		{"existing new ID", "exists", 1, "taken", sessionstore.ErrExists},
		{"invalid new ID", "exists", 1, "../f3", sessionstore.ErrInvalidID},
		{"invalid source ID", "../exists", 1, "f4", sessionstore.ErrInvalidID},
	}
	for _, tt := range tests {
		_, err := f.s.Fork(f.ctx, tt.from, tt.rev, tt.newID, sessionstore.AcquireOptions{})
		require.ErrorIs(t, err, tt.want, tt.name)
	}
	require.ElementsMatch(t, []string{"exists", "taken"}, ids(f.listAll(summary.Query{})), "a failed Fork left something behind")
	require.Equal(t, uint64(1), f.load("taken").Revision)
}
