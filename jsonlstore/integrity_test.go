package jsonlstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/summary"
)

// TestInPlaceTruncationIsCorruption: a log cut in place (same inode) below
// a revision its own summary.json records is corruption, whatever the
// sizes say: readers report it, a holder refuses, nothing is cut or
// written, and no different revision 16 can ever be written.
func TestInPlaceTruncationIsCorruption(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // damaged on purpose
	path := toolSession(t, st, "cut", 16)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, fi.Size()-100)) // same inode, the last record torn
	cut, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = st.Load(ctx, "cut")
	require.ErrorIs(t, err, sessionstore.ErrCorrupt)
	require.ErrorContains(t, err, "revision 16 was committed")
	_, err = st.TryAcquire(ctx, "cut", sessionstore.AcquireOptions{})
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, uint64(16), ce.Revision)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, cut, after, "nothing cut or written")
	_, err = os.Stat(filepath.Join(st.Dir(), "cut", ForensicDir))
	require.True(t, os.IsNotExist(err), "nothing copied aside")
	vr, err := st.Verify(ctx, "cut")
	require.NoError(t, err)
	require.False(t, vr.OK())
}

// TestLogChangedInPlaceIsReadAgain: a log overwritten in place behind the
// store's back, to the same size, is not listed from its summary.json (the
// summary records the log's modification time): the listing reads the log
// and finds the damage.
func TestLogChangedInPlaceIsReadAgain(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // damaged on purpose
	path := toolSession(t, st, "dd", 5)
	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "listed from a current summary")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	// A dd into the last record: same size, same inode, a later mtime.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("XXXX"), toolLineOffset(data, 4)+60)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Chtimes(path, fi.ModTime().Add(time.Second), fi.ModTime().Add(time.Second)))

	fresh, err := Open(st.Dir(), Options{})
	require.NoError(t, err)
	defer fresh.Close()
	page, err = fresh.List(ctx, summary.Query{})
	require.NoError(t, err)
	for _, it := range page.Items {
		require.NotEqual(t, "dd", string(it.ID), "a damaged log is not listed as healthy from its stale summary")
	}
	_, err = fresh.Load(ctx, "dd")
	require.ErrorIs(t, err, sessionstore.ErrCorrupt)
}

// TestSparseTails: a log grown by a gigabyte or a terabyte of holes
// (truncate -s +1G) is damage: readers and holders say so at once, with
// the offset and size, having read a bounded number of bytes; nothing is
// copied into forensic/ or cut, and other sessions are unaffected.
func TestSparseTails(t *testing.T) {
	ctx := context.Background()
	for _, grow := range []int64{1 << 30, 1 << 40} {
		st := openUncheckedStore(t) // damaged on purpose
		path := toolSession(t, st, "sparse", 5)
		toolSession(t, st, "other", 3)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		if err := os.Truncate(path, fi.Size()+grow); err != nil {
			t.Skipf("this file system does not take a sparse file of %d bytes: %v", fi.Size()+grow, err)
		}
		_, err = st.Load(ctx, "sparse")
		var ce *sessionstore.CorruptionError
		require.ErrorAs(t, err, &ce, "grown by %d", grow)
		require.Equal(t, fi.Size()+grow-record.TailLimit(sessionstore.DefaultMaxRecordBytes), ce.Offset)
		require.ErrorContains(t, err, "more than a torn append can leave")
		_, err = st.TryAcquire(ctx, "sparse", sessionstore.AcquireOptions{})
		require.ErrorAs(t, err, &ce)
		_, err = os.Stat(filepath.Join(st.Dir(), "sparse", ForensicDir))
		require.True(t, os.IsNotExist(err), "nothing copied aside")
		after, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, fi.Size()+grow, after.Size(), "nothing cut")

		page, err := st.List(ctx, summary.Query{})
		require.NoError(t, err)
		require.NotEmpty(t, page.Items)
		w, err := st.TryAcquire(ctx, "other", sessionstore.AcquireOptions{})
		require.NoError(t, err, "other sessions are unaffected")
		require.NoError(t, w.Release(ctx))
		vr, err := st.Verify(ctx)
		require.NoError(t, err)
		require.False(t, vr.OK())
		require.NoError(t, os.Truncate(path, 0)) // give the space back before the next round
	}
}

// TestCRLFLogNamed: a log converted to CRLF line endings says so, and how
// to convert it back, instead of "no valid record".
func TestCRLFLogNamed(t *testing.T) {
	ctx := context.Background()
	st, _ := toolStore(t, Options{}, "crlf")
	for _, err := range []error{
		func() error { _, err := st.Load(ctx, "crlf"); return err }(),
		func() error { _, err := st.TryAcquire(ctx, "crlf", sessionstore.AcquireOptions{}); return err }(),
	} {
		require.ErrorIs(t, err, record.ErrCRLF)
		require.ErrorContains(t, err, "sed -i")
	}
	vr, err := st.Verify(ctx, "crlf")
	require.NoError(t, err)
	require.Contains(t, vr.Sessions[0].Problems[0].Message, "CRLF line endings")
}
