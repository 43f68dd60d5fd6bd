package jsonlstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// bkGrow appends n revisions to session id of st (creating it when
// missing), each plSnapshot(id, rev, variant), and returns the latest
// revision.
func bkGrow(t testing.TB, st *Store, id session.SessionID, n, variant int) uint64 {
	t.Helper()
	ctx := context.Background()
	var rev uint64
	w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
	if err == nil {
		rec, err := w.Latest(ctx)
		require.NoError(t, err)
		rev = rec.Revision
	} else {
		require.ErrorIs(t, err, sessionstore.ErrNotFound)
		w, err = st.Create(ctx, plSnapshot(id, 1, variant), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		rev, n = 1, n-1
	}
	for range n {
		rev, err = w.Append(ctx, rev, plSnapshot(id, rev+1, variant))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	return rev
}

// bkRevisions is every revision of session id in st, each encoded.
func bkRevisions(t *testing.T, st *Store, id session.SessionID) []string {
	t.Helper()
	var out []string
	for rec, err := range st.History(context.Background(), id) {
		require.NoError(t, err)
		require.Equal(t, uint64(len(out)+1), rec.Revision)
		out = append(out, encodeRec(t, rec))
	}
	return out
}

// bkSameAs requires that dst holds session id exactly as st does: every
// revision, equal.
func bkSameAs(t *testing.T, st, dst *Store, id session.SessionID) {
	t.Helper()
	require.Equal(t, bkRevisions(t, st, id), bkRevisions(t, dst, id), "session %s", id)
}

func logSize(t testing.TB, st *Store, id session.SessionID) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(st.Dir(), string(id), "log.jsonl"))
	require.NoError(t, err)
	return fi.Size()
}

// TestBackupIncremental backs up into an existing backup: only what
// changed is written (the appended bytes, exactly), what did not change
// is left alone, a second run changes nothing, and the copy verifies and
// holds every revision of the source.
func TestBackupIncremental(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	bkGrow(t, st, "a", 10, 0)
	bkGrow(t, st, "b", 5, 0)
	dest := filepath.Join(t.TempDir(), "backup")
	rep, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Len(t, rep.Sessions, 2)
	for _, sb := range rep.Sessions {
		require.Equal(t, maintenance.BackupNew, sb.Action)
	}

	before := logSize(t, st, "a")
	bkGrow(t, st, "a", 3, 0)
	grown := logSize(t, st, "a") - before
	rep, err = st.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Len(t, rep.Sessions, 1)
	sb := rep.Sessions[0]
	require.Equal(t, session.SessionID("a"), sb.ID)
	require.Equal(t, maintenance.BackupAppended, sb.Action)
	require.Equal(t, uint64(13), sb.Revision)
	require.Equal(t, grown, sb.BytesCopied, "only the appended bytes are written")
	require.Equal(t, grown, rep.BytesCopied)
	require.Equal(t, 1, rep.Unchanged)
	require.Len(t, rep.Verify.Sessions, 1, "only what was written is verified")

	dst, err := Open(dest, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	verifyAtCleanup(t, dst)
	bkSameAs(t, st, dst, "a")
	bkSameAs(t, st, dst, "b")

	// Idempotent: nothing changed, nothing written.
	rep, err = st.Backup(ctx, dest)
	require.NoError(t, err)
	require.Empty(t, rep.Sessions)
	require.Equal(t, 2, rep.Unchanged)
	require.Zero(t, rep.BytesCopied)

	// The copy is a store of its own: a holder there takes over, above
	// every generation, and a later backup still appends after it... no:
	// the copy's log is then not the source's prefix, and is replaced.
}

// TestBackupCompactedCopiedWhole: a session compacted since the last
// backup is copied whole (its archive too), and the report says why; the
// copy holds every revision.
func TestBackupCompactedCopiedWhole(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	bkGrow(t, st, "c", 20, 0)
	dest := filepath.Join(t.TempDir(), "backup")
	_, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	_, err = st.Compact(ctx, "c", maintenance.CompactPolicy{KeepLast: 3}, 0)
	require.NoError(t, err)
	bkGrow(t, st, "c", 2, 0)
	rep, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Len(t, rep.Sessions, 1)
	sb := rep.Sessions[0]
	require.Equal(t, maintenance.BackupReplaced, sb.Action)
	require.Equal(t, "compacted since the last backup", sb.Reason)
	require.Empty(t, sb.Forensic, "every revision the old copy held is in the source")
	require.Positive(t, sb.ArchiveBytes)

	dst, err := Open(dest, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	verifyAtCleanup(t, dst)
	bkSameAs(t, st, dst, "c")

	// And then incremental again.
	bkGrow(t, st, "c", 1, 0)
	rep, err = st.Backup(ctx, dest)
	require.NoError(t, err)
	require.Len(t, rep.Sessions, 1)
	require.Equal(t, maintenance.BackupAppended, rep.Sessions[0].Action)
	bkSameAs(t, st, dst, "c")
}

// TestBackupDivergedDestKeepsForensic: when the destination's copy holds
// revisions the source does not (someone wrote into the backup), the copy
// is replaced by the source's, and the old log is kept in the
// destination's forensic/ first.
func TestBackupDivergedDestKeepsForensic(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	bkGrow(t, st, "d", 6, 0)
	dest := filepath.Join(t.TempDir(), "backup")
	_, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	dst, err := Open(dest, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	verifyAtCleanup(t, dst)
	bkGrow(t, dst, "d", 2, 1)
	bkGrow(t, st, "d", 3, 0)
	old, err := os.ReadFile(filepath.Join(dest, "d", "log.jsonl"))
	require.NoError(t, err)

	rep, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Len(t, rep.Sessions, 1)
	sb := rep.Sessions[0]
	require.Equal(t, maintenance.BackupReplaced, sb.Action)
	require.Equal(t, "repaired or rewritten since the last backup", sb.Reason)
	require.NotEmpty(t, sb.Forensic)
	kept, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(sb.Forensic)))
	require.NoError(t, err)
	require.Equal(t, old, kept)
	bkSameAs(t, st, dst, "d")
}

// TestBackupDelete: without Delete nothing in the destination is
// removed; with it, the sessions the source no longer has are.
func TestBackupDelete(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	bkGrow(t, st, "keep", 3, 0)
	bkGrow(t, st, "gone", 3, 0)
	dest := filepath.Join(t.TempDir(), "backup")
	_, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	w, err := st.Acquire(ctx, "gone", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx))

	rep, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	require.Empty(t, rep.Deleted)
	require.DirExists(t, filepath.Join(dest, "gone"))

	// Named sessions never delete anything.
	rep, err = st.BackupWith(ctx, dest, maintenance.BackupOptions{Delete: true}, "keep")
	require.NoError(t, err)
	require.Empty(t, rep.Deleted)
	require.DirExists(t, filepath.Join(dest, "gone"))

	var calls int
	rep, err = st.BackupWith(ctx, dest, maintenance.BackupOptions{Delete: true, Progress: func(done, total int) {
		calls++
		require.Equal(t, calls, done)
		require.Equal(t, 1, total)
	}})
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{"gone"}, rep.Deleted)
	require.NoDirExists(t, filepath.Join(dest, "gone"))
	require.DirExists(t, filepath.Join(dest, "keep"))
	require.Equal(t, 1, calls)
}

// TestBackupTornTailInDest: an earlier backup killed mid-append left a
// torn line at the end of the destination's log. Readers of the copy see
// the revisions before it; the next backup cuts it and appends.
func TestBackupTornTailInDest(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	bkGrow(t, st, "t", 5, 0)
	dest := filepath.Join(t.TempDir(), "backup")
	_, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	end := logSize(t, st, "t")
	bkGrow(t, st, "t", 3, 0)
	src, err := os.ReadFile(filepath.Join(st.Dir(), "t", "log.jsonl"))
	require.NoError(t, err)
	// What a kill in the middle of the append leaves: one whole new line
	// and half of the next.
	nl := end
	for src[nl] != '\n' {
		nl++
	}
	nl2 := nl + 1
	for src[nl2] != '\n' {
		nl2++
	}
	torn := src[end : nl+1+(nl2-nl)/2]
	f, err := os.OpenFile(filepath.Join(dest, "t", "log.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(torn)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	dst, err := Open(dest, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	rec, err := dst.Load(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, uint64(6), rec.Revision, "the torn line is not a revision")

	rep, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Len(t, rep.Sessions, 1)
	require.Equal(t, maintenance.BackupAppended, rep.Sessions[0].Action)
	verifyAtCleanup(t, dst)
	bkSameAs(t, st, dst, "t")
}

// TestBackupSkipsHeldDest: a session a live writer holds in the
// destination is skipped and reported, and nothing of it is written.
func TestBackupSkipsHeldDest(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	bkGrow(t, st, "h", 3, 0)
	dest := filepath.Join(t.TempDir(), "backup")
	_, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	bkGrow(t, st, "h", 2, 0)
	dst, err := Open(dest, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	w, err := dst.Acquire(ctx, "h", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	before := logSize(t, dst, "h")
	rep, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	require.Empty(t, rep.Sessions)
	require.Equal(t, "held by a live writer in the destination", rep.Skipped["h"])
	require.Equal(t, before, logSize(t, dst, "h"))
	require.NoError(t, w.Release(ctx))
	rep, err = st.Backup(ctx, dest)
	require.NoError(t, err)
	require.Len(t, rep.Sessions, 1)
	bkSameAs(t, st, dst, "h")
}
