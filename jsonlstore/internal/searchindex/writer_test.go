package searchindex

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
	"github.com/sessionstore/sessionstore/session"
)

// TestWriterLockOneAtATime: .search/writer makes one handle at a time
// the index's writer. While one holds it, another's NoWait take fails at
// once with ErrBusy, and a take that waits returns once it is released
// (not before); one that waits in vain fails with ErrBusy and leaves the
// lock free once the holder lets go.
func TestWriterLockOneAtATime(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	_, x := openStore(t, dir, jsonlstore.Options{}, nil)
	_, y := openStore(t, dir, jsonlstore.Options{}, nil)
	require.NoError(t, x.fixSearchDir())

	release, err := x.lockWriter(ctx, searchdb.NoWait)
	require.NoError(t, err)
	_, err = y.lockWriter(ctx, searchdb.NoWait)
	require.ErrorIs(t, err, searchdb.ErrBusy, "held by the other handle")

	_, err = y.lockWriter(ctx, searchdb.Wait(20*time.Millisecond))
	require.ErrorIs(t, err, searchdb.ErrBusy, "waited in vain")

	got := make(chan func())
	go func() {
		r, err := y.lockWriter(ctx, searchdb.Wait(time.Hour))
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("took the lock while the other handle held it")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	r := <-got // the wait ends when the lock is released
	require.NotNil(t, r)
	_, err = x.lockWriter(ctx, searchdb.NoWait)
	require.ErrorIs(t, err, searchdb.ErrBusy, "now held by the waiter")
	r()
	// Free again, also of the wait given up above.
	release, err = x.lockWriter(ctx, searchdb.Wait(time.Hour))
	require.NoError(t, err)
	release()
}

// TestWriterLockKeepsOutTheQueue: while another handle holds the writer
// lock, a search does not wait for it (it answers with what was appended
// read beside the index, and does not write the row), the queue's
// writes wait for it, and once it is free the queue writes the row.
func TestWriterLockKeepsOutTheQueue(t *testing.T) {
	ctx := t.Context()
	st, x, w, before, release := appendWhileLocked(t, "turns")
	start := time.Now()
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "heron"})
	require.NoError(t, err)
	require.Less(t, time.Since(start), time.Duration(searchFeedWait), "the search did not wait for the writer lock")
	require.Len(t, res.Hits, 1)
	require.Equal(t, w.Revision(), res.Hits[0].Revision)
	// Past the queue's delay: its write waits for the lock.
	time.Sleep(3 * searchFlushDelay)
	now, err := x.States(ctx)
	require.NoError(t, err)
	require.Equal(t, before["turns"].Rev, now["turns"].Rev, "nothing written while the lock was held")

	release()
	require.Eventually(t, func() bool {
		now, err := x.States(ctx)
		return err == nil && now["turns"].Rev == w.Revision()
	}, 30*time.Second, 5*time.Millisecond, "the queue wrote the row once the lock was free")
	require.NoError(t, w.Release(ctx))
}

// TestWriterLockJunkIsReplaced: a directory where .search/writer belongs
// fails the index's writes as junk (never a lock taken on something
// else); a rebuild replaces it with the lock file, and writes go on.
func TestWriterLockJunkIsReplaced(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, x := openStore(t, dir, jsonlstore.Options{}, nil)
	s := sessiontest.New("junk")
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "grebe", sessiontest.Epoch)))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, x.writer)))
	require.NoError(t, os.Mkdir(filepath.Join(dir, x.writer), 0o700))
	_, err = x.lockWriter(ctx, searchdb.NoWait)
	require.True(t, errors.Is(err, errSearchJunk), "%v", err)
	_, err = st.ReindexSearch(ctx)
	require.NoError(t, err)
	release, err := x.lockWriter(ctx, searchdb.NoWait)
	require.NoError(t, err)
	release()
	fi, err := os.Lstat(filepath.Join(dir, x.writer))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "grebe"})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)
}

// TestWriterLockQueueTriesAgainAfterBusy: a queue's write that waits
// searchFeedWait for the writer lock in vain is tried again once the
// lock is free, with no append or search to prompt it. (The timer that
// ran the write had fired but was still taken for the queue's pending
// one, so nothing armed another: the queue wrote nothing again until
// the store closed, and every search read the session's appends from
// its log.) The wait blocks in flock(2), a system call, so the test runs
// on the real clock: it waits until the queue has found the lock busy,
// then releases it.
func TestWriterLockQueueTriesAgainAfterBusy(t *testing.T) {
	ctx := t.Context()
	_, x, w, _, release := appendWhileLocked(t, "retried")
	tries := func() int {
		x.feedMu.Lock()
		defer x.feedMu.Unlock()
		return x.feed.tries
	}
	require.Eventually(t, func() bool { return tries() > 0 }, 30*time.Second, 5*time.Millisecond, "the queue's write found the lock busy")
	release()
	require.Eventually(t, func() bool {
		now, err := x.States(ctx)
		return err == nil && now["retried"].Rev == w.Revision()
	}, 30*time.Second, 5*time.Millisecond, "the queue wrote the row once the lock was free")
	require.NoError(t, w.Release(ctx))
}

// appendWhileLocked makes a store holding session id, of one message,
// indexed (the index's states then are before), and a second handle of
// the index; the second takes the writer lock (release lets it go), and
// w, the session's writer, appends a message holding "heron".
func appendWhileLocked(t *testing.T, id session.SessionID) (st *jsonlstore.Store, x *Index, w sessionstore.Writer, before map[session.SessionID]searchdb.State, release func()) {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, x = openStore(t, dir, jsonlstore.Options{}, nil)
	_, other := openStore(t, dir, jsonlstore.Options{}, nil)
	s := sessiontest.New(string(id))
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "first", sessiontest.Epoch)))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"})
	require.NoError(t, err)
	before, err = x.States(ctx)
	require.NoError(t, err)
	release, err = other.lockWriter(ctx, searchdb.NoWait)
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, "heron", sessiontest.Epoch)))
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err)
	return st, x, w, before, release
}
