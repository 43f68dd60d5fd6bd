package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
)

// recordedCap is session id's max_record_bytes.
func recordedCap(t *testing.T, dsn string, id session.SessionID) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT max_record_bytes FROM pgstore_sessions WHERE id = $1`, string(id)).Scan(&n))
	return n
}

// TestRecordCapIsTheSessions: records written under a cap above a
// reader's are read, verified and exported by a store opened with a
// smaller cap, never taken for corruption; a holder with the smaller cap
// writes under the session's (a full record as large as the ones before
// it), and leaves the recorded cap as it was; a fork by it is written
// under the session's.
func TestRecordCapIsTheSessions(t *testing.T) {
	ctx := context.Background()
	const bigCap = 4 << 20
	dsn := newDSN(t)
	big := openDSN(t, dsn, pgstore.Options{MaxRecordBytes: bigCap})
	s := sessiontest.New("wide")
	w, err := big.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(bigCap), recordedCap(t, dsn, "wide"))
	msg, input := sessiontest.WideToolCall(2 << 20)
	require.NoError(t, s.AppendMessage(msg))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))

	for _, own := range []int{1 << 20, 256 << 10} {
		small := openDSN(t, dsn, pgstore.Options{MaxRecordBytes: own})
		rec, err := small.Load(ctx, "wide")
		require.NoError(t, err, "cap %d", own)
		require.Len(t, string(rec.Snapshot.Messages[0].Parts[0].Input), len(input))
		vr, err := small.Verify(ctx, "wide")
		require.NoError(t, err)
		require.True(t, vr.OK(), "cap %d: %+v", own, vr)
		var n uint64
		for _, err := range small.History(ctx, "wide") {
			require.NoError(t, err, "cap %d", own)
			n++
		}
		require.Equal(t, rec.Revision, n)
		var out strings.Builder
		require.NoError(t, small.Export(ctx, "wide", &out, false), "cap %d", own)
		require.Equal(t, int(rec.Revision), strings.Count(out.String(), "\n"))

		// A holder with the smaller cap appends a snapshot whose record,
		// larger than its own cap, is within the session's.
		w, err := small.Acquire(ctx, "wide", sessionstore.AcquireOptions{})
		require.NoError(t, err, "cap %d", own)
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "thanks", sessiontest.Epoch)))
		_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
		require.NoError(t, err, "cap %d", own)
		require.NoError(t, w.Release(ctx))
		require.Equal(t, int64(bigCap), recordedCap(t, dsn, "wide"), "a smaller cap leaves the session's")

		// A fork by the smaller cap is written under the session's.
		forkID := session.SessionID(fmt.Sprintf("fork-%d", own))
		fw, err := small.Fork(ctx, "wide", 0, forkID, sessionstore.AcquireOptions{})
		require.NoError(t, err, "cap %d", own)
		require.NoError(t, fw.Release(ctx))
		require.Equal(t, int64(bigCap), recordedCap(t, dsn, forkID), "the fork records its source's cap")
	}

	// A holder with a larger cap raises it.
	wider := openDSN(t, dsn, pgstore.Options{MaxRecordBytes: 2 * bigCap})
	w, err = wider.Acquire(ctx, "wide", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.Equal(t, int64(2*bigCap), recordedCap(t, dsn, "wide"))

	// Imported into a database whose store has a smaller cap, the session
	// records its largest record, and reads there.
	other := newDSN(t)
	narrow := openDSN(t, other, pgstore.Options{MaxRecordBytes: 256 << 10})
	n, err := narrow.Import(ctx, "wide", big.RecordLines(ctx, "wide"), func(ref session.ContentRef) ([]byte, error) {
		return big.ReadBlob(ctx, "wide", ref) // the pages of its full records
	})
	require.NoError(t, err)
	require.Equal(t, 4, n)
	got := recordedCap(t, other, "wide")
	require.Greater(t, got, int64(len(input)), "at least its largest record")
	require.Less(t, got, int64(bigCap))
	rec, err := narrow.Load(ctx, "wide")
	require.NoError(t, err)
	require.Len(t, string(rec.Snapshot.Messages[0].Parts[0].Input), len(input))
}
