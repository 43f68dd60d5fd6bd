package jsonlstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// toolCompacted gives st a session "arch" of 8 revisions whose first 5
// compaction moved into an archive segment, and returns its archive
// directory.
func toolCompacted(t *testing.T, st *Store) string {
	t.Helper()
	toolSession(t, st, "arch", 8)
	rep, err := st.Compact(context.Background(), "arch", maintenance.CompactPolicy{KeepLast: 3}, 0)
	require.NoError(t, err)
	require.Equal(t, int64(5), rep.RevisionsTrimmed, "%+v", rep)
	require.NotEmpty(t, rep.Segment)
	return filepath.Join(st.Dir(), "arch", ArchiveDir)
}

// TestVerifyArchives: archived revisions are verified with the log's; a
// damaged segment is a problem; files a compaction left behind are notes.
func TestVerifyArchives(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // its segment is damaged on purpose
	dir := toolCompacted(t, st)
	rep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Equal(t, 8, rep.Sessions[0].Records, "archived records are checked too")
	require.Empty(t, rep.Sessions[0].Notes)

	// A leftover of an interrupted compaction.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".segment-1.tmp"), []byte("x"), 0o600))
	rep, err = st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Len(t, rep.Sessions[0].Notes, 1)
	require.Contains(t, rep.Sessions[0].Notes[0].String(), "arch/archive/.segment-1.tmp offset 0: not part of the archive")

	// A damaged segment.
	seg := toolSegment(t, dir)
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x10
	require.NoError(t, os.WriteFile(seg, data, 0o600))
	rep, err = st.Verify(ctx)
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Len(t, rep.Sessions[0].Problems, 1)
	require.Equal(t, "arch/archive/"+filepath.Base(seg), rep.Sessions[0].Problems[0].File)

	// Repair does not cut the log for damage it cannot reach.
	logBefore, err := os.ReadFile(filepath.Join(st.Dir(), "arch", LogFile))
	require.NoError(t, err)
	rrep, err := st.Repair(ctx, "arch", maintenance.RepairOptions{TruncateAtCorruption: true})
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), "the damage is in the archives")
	require.NotNil(t, rrep.Found)
	require.False(t, rrep.Cut)
	logAfter, err := os.ReadFile(filepath.Join(st.Dir(), "arch", LogFile))
	require.NoError(t, err)
	require.Equal(t, logBefore, logAfter)
}

func toolSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.zst"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	return segs[0]
}

// TestRecordsArchived: Records names the archive segment of archived
// revisions, and Export writes every revision, archived ones included.
func TestRecordsArchived(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	dir := toolCompacted(t, st)
	seg := "arch/archive/" + filepath.Base(toolSegment(t, dir))
	var n uint64
	for info, err := range st.Records(ctx, session.SessionID("arch")) {
		require.NoError(t, err)
		n++
		require.Equal(t, n, info.Revision)
		if n <= 5 {
			require.True(t, info.Archived)
			require.Equal(t, seg, info.File)
		} else {
			require.False(t, info.Archived)
			require.Equal(t, "arch/"+LogFile, info.File)
		}
	}
	require.Equal(t, uint64(8), n)

	var out bytes.Buffer
	require.NoError(t, st.Export(ctx, "arch", &out, false))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 8)
	require.True(t, strings.HasPrefix(lines[0], `{"revision":1,`))

	du, err := st.DiskUsage(ctx, "arch")
	require.NoError(t, err)
	require.Positive(t, du.Sessions[0].ArchiveBytes)
}
