package jsonlstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
)

func TestDU(t *testing.T) {
	ctx := context.Background()
	st, root := toolStore(t, Options{}, "clean", "partial-last-line")
	// Recovery moves the partial line into forensic/ and writes lease files.
	w, err := st.Acquire(ctx, "partial-last-line", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	tail := w.Recovery().TailBytes
	require.Positive(t, tail)
	require.NoError(t, w.Release(ctx))
	// An archive directory (compaction will write them) and a leftover.
	require.NoError(t, os.Mkdir(filepath.Join(root, "clean", ArchiveDir), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, "clean", ArchiveDir, "1-3.zst"), make([]byte, 100), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(root, ".trash-x-0123456789abcdef"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".trash-x-0123456789abcdef", LogFile), make([]byte, 7), 0o600))

	size := func(parts ...string) int64 {
		fi, err := os.Stat(filepath.Join(append([]string{root}, parts...)...))
		require.NoError(t, err)
		return fi.Size()
	}
	rep, err := st.DiskUsage(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Sessions, 2)
	clean, partial := rep.Sessions[0], rep.Sessions[1]
	require.Equal(t, sessionstore.SessionUsage{ID: "clean", LogBytes: size("clean", LogFile), ArchiveBytes: 100,
		TotalBytes: size("clean", LogFile) + 100}, clean)
	require.Equal(t, size("partial-last-line", LogFile), partial.LogBytes)
	require.Equal(t, tail, partial.ForensicBytes)
	require.Equal(t, size("partial-last-line", "lease.json")+size("partial-last-line", "lease.lock")+size("partial-last-line", SettingsFile), partial.OtherBytes)
	require.Equal(t, partial.LogBytes+partial.ForensicBytes+partial.OtherBytes, partial.TotalBytes)
	require.Equal(t, int64(len(toolFixture(t, "partial-last-line"))), partial.LogBytes+partial.ForensicBytes,
		"recovery moved bytes, it did not lose any")
	require.Equal(t, clean.TotalBytes+partial.TotalBytes, rep.Total.TotalBytes)
	require.Equal(t, clean.LogBytes+partial.LogBytes, rep.Total.LogBytes)
	require.Equal(t, int64(7), rep.LeftoverBytes)

	one, err := st.DiskUsage(ctx, "clean")
	require.NoError(t, err)
	require.Equal(t, []sessionstore.SessionUsage{clean}, one.Sessions)
	require.Zero(t, one.LeftoverBytes, "leftovers only in a listing of all sessions")
	_, err = st.DiskUsage(ctx, "gone")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}

// TestDUBlobs: blobs/ counts as BlobBytes, as stored, and in the total.
func TestDUBlobs(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	withBlobs(t, st, "blobs")
	rep, err := st.DiskUsage(ctx, "blobs")
	require.NoError(t, err)
	u := rep.Sessions[0]
	require.Equal(t, dirBytes(t, filepath.Join(st.Dir(), "blobs", BlobDir)), u.BlobBytes)
	require.Positive(t, u.BlobBytes)
	require.Equal(t, dirBytes(t, filepath.Join(st.Dir(), "blobs")), u.TotalBytes)
	require.Equal(t, u.LogBytes+u.BlobBytes+u.OtherBytes, u.TotalBytes)
	require.Equal(t, u.BlobBytes, rep.Total.BlobBytes)
}
