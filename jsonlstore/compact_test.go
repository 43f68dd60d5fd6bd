package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// appendN creates session id and appends revisions up to n, returning the
// writer and every revision's encoded payload (index = revision).
func appendN(t *testing.T, st *Store, id string, n int) (sessionstore.Writer, map[uint64]string) {
	t.Helper()
	ctx := context.Background()
	s := sessiontest.New(id)
	want := map[uint64]string{}
	snap := sessiontest.Snap(t, s)
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	want[1] = mustEncode(t, snap)
	for r := uint64(2); r <= uint64(n); r++ {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("message %d", r), sessiontest.Epoch)))
		snap := sessiontest.Snap(t, s)
		rev, err := w.Append(ctx, r-1, snap)
		require.NoError(t, err)
		require.Equal(t, r, rev)
		want[r] = mustEncode(t, snap)
	}
	return w, want
}

func mustEncode(t *testing.T, snap sessnap.Snapshot) string {
	t.Helper()
	b, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
	require.NoError(t, err)
	return string(b)
}

// checkAllRevisions proves every revision reads back exactly once, from
// the log or the archives, by History and by LoadRevision.
func checkAllRevisions(t *testing.T, st *Store, id string, want map[uint64]string) {
	t.Helper()
	ctx := context.Background()
	var got uint64
	for rec, err := range st.History(ctx, session.SessionID(id)) {
		require.NoError(t, err)
		got++
		require.Equal(t, got, rec.Revision)
		require.Equal(t, want[got], encodeRec(t, rec))
	}
	require.Equal(t, uint64(len(want)), got)
	for r := uint64(1); r <= uint64(len(want)); r++ {
		rec, err := st.LoadRevision(ctx, session.SessionID(id), r)
		require.NoError(t, err, "revision %d", r)
		require.Equal(t, want[r], encodeRec(t, rec))
	}
	latest, err := st.Load(ctx, session.SessionID(id))
	require.NoError(t, err)
	require.Equal(t, uint64(len(want)), latest.Revision)
}

func encodeRec(t *testing.T, rec sessionstore.Record) string {
	b, err := adapter.EncodeSnapshot(rec.ID, rec.Snapshot, 0)
	require.NoError(t, err)
	return string(b)
}

func TestCompactKeepsEveryRevision(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, want := appendN(t, st, "cmp", 100)
	logFile := filepath.Join(st.Dir(), "cmp", LogFile)
	before, err := os.ReadFile(logFile)
	require.NoError(t, err)

	// The workload writes deltas; a cut goes back to the full record of
	// the first kept revision's chain.
	require.Positive(t, kindsOf(before)[record.KindDelta])
	first := chainStart(before, 91)
	require.Less(t, first, uint64(91), "KeepLast 10 lands on a delta")

	dry, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 10, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, int64(first-1), dry.RevisionsTrimmed)
	after, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Equal(t, before, after, "a dry run changes nothing")
	_, err = os.Stat(filepath.Join(st.Dir(), "cmp", ArchiveDir))
	require.ErrorIs(t, err, os.ErrNotExist, "a dry run creates nothing")

	rep, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 10})
	require.NoError(t, err)
	require.Equal(t, int64(first-1), rep.RevisionsTrimmed)
	require.Equal(t, first, rep.FirstKept)
	require.Positive(t, rep.ArchiveBytes)
	require.Less(t, rep.LogBytesAfter, rep.LogBytesBefore)
	after, err = os.ReadFile(logFile)
	require.NoError(t, err)
	require.Equal(t, string(before[len(before)-len(after):]), string(after), "kept records are copied byte for byte")
	require.Equal(t, record.KindFull, revisionKinds(after)[first], "the log starts with a full record")
	checkAllRevisions(t, st, "cmp", want)

	// The holder keeps appending after compacting its own session.
	s, err := st.Load(ctx, "cmp")
	require.NoError(t, err)
	rev, err := w.Append(ctx, 100, s.Snapshot)
	require.NoError(t, err)
	require.Equal(t, uint64(101), rev)
	want[101] = want[100]
	// A second compaction adds a second segment.
	log, err := os.ReadFile(logFile)
	require.NoError(t, err)
	second := chainStart(log, 101)
	rep, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 1})
	require.NoError(t, err)
	require.Equal(t, int64(second-first), rep.RevisionsTrimmed)
	checkAllRevisions(t, st, "cmp", want)
	m, err := archive.ReadManifest(st.fs, "cmp")
	require.NoError(t, err)
	require.Len(t, m.Segments, 2)
	require.NoError(t, w.Release(ctx))

	// A new holder after compaction: generations and recovery still right.
	w2, err := st.Acquire(ctx, "cmp", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Zero(t, w2.Recovery().TailBytes)
	_, err = w2.Append(ctx, 101, s.Snapshot)
	require.NoError(t, err)
	require.NoError(t, w2.Release(ctx))

	// Standalone compaction skips a held session.
	w3, err := st.Acquire(ctx, "cmp", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rep, err = st.Compact(ctx, "cmp", maintenance.CompactPolicy{KeepLast: 1}, 0)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Skipped)
	require.NoError(t, w3.Release(ctx))
	log, err = os.ReadFile(logFile)
	require.NoError(t, err)
	rep, err = st.Compact(ctx, "cmp", maintenance.CompactPolicy{KeepLast: 1}, 0)
	require.NoError(t, err)
	require.Equal(t, int64(chainStart(log, 102)-second), rep.RevisionsTrimmed)
	require.Equal(t, record.KindFull, revisionKinds(log)[rep.FirstKept])
}
