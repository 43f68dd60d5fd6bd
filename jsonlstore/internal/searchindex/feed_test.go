package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
	"github.com/sessionstore/sessionstore/session"
)

// The index's tests that look inside it: its feed's queue, its rows.
// The tests that run it through the store's harness (processes, fault
// file systems, the catalog) are jsonlstore's search_*_test.go.

// openStore opens a store at dir with opts and this package's index, and
// returns the store and its index, closed at cleanup. onLog, if set, is
// called whenever the index reads a session's log.
func openStore(t *testing.T, dir string, opts jsonlstore.Options, onLog func()) (*jsonlstore.Store, *Index) {
	t.Helper()
	var x *Index
	c := Component{opened: func(i *Index) { x = i }}
	if onLog != nil {
		c.wrap = func(h searchhost.Host) searchhost.Host { return hookHost{Host: h, onLog: onLog} }
	}
	opts.Search = c
	st, err := jsonlstore.Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NotNil(t, x)
	return st, x
}

// hookHost calls onLog before each read of a session's log.
type hookHost struct {
	searchhost.Host
	onLog func()
}

func (h hookHost) ReadLog(ctx context.Context, id session.SessionID, fn func(searchhost.Log) error) error {
	h.onLog()
	return h.Host.ReadLog(ctx, id, fn)
}

// quietWriter holds a session through a store opened without the search
// index (a process that does not index it). Its clock runs skew ahead
// of the wall clock (its records' times).
type quietWriter struct {
	w    sessionstore.Writer
	s    *session.Session
	skew atomic.Int64
}

func newQuietWriter(t *testing.T, dir string, id session.SessionID) *quietWriter {
	t.Helper()
	ctx := t.Context()
	q := &quietWriter{}
	now := func() time.Time { return time.Now().Add(time.Duration(q.skew.Load())) }
	other, err := jsonlstore.Open(dir, jsonlstore.Options{BlobThreshold: -1, Now: now})
	require.NoError(t, err)
	w, err := other.Acquire(ctx, id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := other.Load(ctx, id)
	require.NoError(t, err)
	s, err := rec.Session()
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, w.Release(context.Background()))
		require.NoError(t, other.Close())
	})
	q.w, q.s = w, s
	return q
}

// add appends one revision per text, each adding a message, and returns
// the last revision.
func (q *quietWriter) add(t *testing.T, texts ...string) uint64 {
	t.Helper()
	var rev uint64
	for _, text := range texts {
		require.NoError(t, q.s.AppendMessage(session.TextMessage(session.RoleAssistant, text, sessiontest.Epoch)))
		var err error
		rev, err = q.w.Append(t.Context(), q.w.Revision(), sessiontest.Snap(t, q.s))
		require.NoError(t, err)
	}
	return rev
}

type hitKey struct {
	ID       session.SessionID
	Field    string
	Message  int
	Revision uint64
}

func hitKeys(hits []sessionstore.SearchHit) []hitKey {
	out := make([]hitKey, len(hits))
	for i, h := range hits {
		out[i] = hitKey{h.ID, h.Field, h.Message, h.Revision}
	}
	slices.SortFunc(out, func(a, b hitKey) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Message, b.Message), cmp.Compare(a.Field, b.Field))
	})
	return out
}

// TestSearchFeedWritesInTheBackground: appends queue their updates and
// return; the queue reaches the index searchFlushDelay later, in one
// transaction, after which a search finds every session current.
func TestSearchFeedWritesInTheBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st, x := openStore(t, t.TempDir(), jsonlstore.Options{}, nil)
		// The index exists (a first search makes it).
		_, err := st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"})
		require.NoError(t, err)
		s := sessiontest.New("feed")
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "first words", sessiontest.Epoch)))
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		for i := range 5 {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, fmt.Sprintf("reply %d", i), sessiontest.Epoch)))
			_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
		}
		x.feedMu.Lock()
		queued := len(x.feed.pending)
		x.feedMu.Unlock()
		require.Equal(t, 6, queued, "every append queued, none written yet")

		time.Sleep(searchFlushDelay)
		synctest.Wait()
		x.feedMu.Lock()
		queued = len(x.feed.pending)
		x.feedMu.Unlock()
		require.Zero(t, queued)
		states, err := x.States(ctx)
		require.NoError(t, err)
		require.Equal(t, uint64(6), states["feed"].Rev)
		require.Equal(t, 6, states["feed"].Messages)

		res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "reply"})
		require.NoError(t, err)
		require.Zero(t, res.Indexed, "the index was current")
		require.Len(t, res.Hits, 5)
		for _, h := range res.Hits {
			require.Equal(t, uint64(h.Message+1), h.Revision, "message %d appeared at revision %d", h.Message, h.Message+1)
		}
		require.NoError(t, w.Release(ctx))
	})
}

// TestSearchBusyIndexNeverHoldsAnAppend: while another process holds the
// index's write lock, appends go on at once; the queue tries again
// (each try waiting searchFeedWait), then gives up, and the next search reads what the index
// missed from the logs.
func TestSearchBusyIndexNeverHoldsAnAppend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st, x := openStore(t, t.TempDir(), jsonlstore.Options{}, nil)
		_, err := st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"})
		require.NoError(t, err)

		lock, err := sql.Open("sqlite", "file:"+filepath.Join(st.Dir(), x.file)+"?_txlock=immediate")
		require.NoError(t, err)
		defer lock.Close()
		tx, err := lock.Begin()
		require.NoError(t, err)

		s := sessiontest.New("busy")
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "kingfisher", sessiontest.Epoch)))
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		start := time.Now()
		for range 3 {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, "kingfisher again", sessiontest.Epoch)))
			_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
		}
		require.Zero(t, time.Since(start), "appends never wait for the index")
		// Every retry finds the index busy (after waiting searchFeedWait
		// for it); after the last the queue is dropped.
		for try := 0; try <= searchRetries; try++ {
			time.Sleep(searchFlushDelay + time.Duration(searchFeedWait))
			synctest.Wait()
		}
		x.feedMu.Lock()
		queued := len(x.feed.pending)
		x.feedMu.Unlock()
		require.Zero(t, queued, "given up")
		require.NoError(t, tx.Rollback())

		res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "kingfisher"})
		require.NoError(t, err)
		require.Equal(t, 1, res.Indexed, "read from its log")
		require.Len(t, res.Hits, 4)
		require.NoError(t, w.Release(ctx))
	})
}

// TestSearchRowMovedOnDuringCatchUp: another process brings a row further
// between a search's read of the rows and its update (here, the row is
// moved on while the search reads the log: by a writer's queue, in
// production). The search's update finds the row changed; it is built
// again on the row as it is now, and the session is not read whole nor
// searched in memory.
func TestSearchRowMovedOnDuringCatchUp(t *testing.T) {
	ctx := t.Context()
	var moved atomic.Bool
	var other *Index
	onLog := func() {}
	st, x := openStore(t, t.TempDir(), jsonlstore.Options{BlobThreshold: -1}, func() { onLog() })
	x.holderWindow = 0 // the quiet writer does not index: every search writes what it read
	s := sessiontest.New("moved")
	// A first message long enough that the quiet writer's four small
	// appends stay one chain of deltas (FORMAT.md, "Chains"), whatever
	// IDs they carry.
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "first words"+strings.Repeat(" filler", 400), sessiontest.Epoch)))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	q := newQuietWriter(t, st.Dir(), "moved")
	q.add(t, "second words", "third words")
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"})
	require.NoError(t, err)

	// Two revisions appended by a process that does not index, then,
	// while the search reads the log, the row moved to the first of them
	// by another handle's update.
	rev := q.add(t, "puffin one", "puffin two")
	s = q.s
	_, other = openStore(t, st.Dir(), jsonlstore.Options{}, nil)
	onLog = func() {
		if moved.Swap(true) {
			return
		}
		other.mu.Lock()
		defer other.mu.Unlock()
		db, err := other.openSearchLocked(ctx, false, searchWait)
		require.NoError(t, err)
		states, err := db.StatesOf(ctx, []session.SessionID{"moved"})
		require.NoError(t, err)
		st0 := states["moved"]
		ix, err := other.readIndexed(ctx, "moved", &st0)
		require.NoError(t, err)
		// The update to revision rev-1 alone: the first new message.
		u, ok := ix.extend(st0)
		require.True(t, ok)
		u.Rev, u.Messages, u.Add = rev-1, st0.Messages+1, u.Add[:1]
		u.Digest = ix.digest[1]
		applied, err := db.Apply(ctx, []searchdb.Update{u}, searchWait)
		require.NoError(t, err)
		require.Equal(t, []bool{true}, applied)
	}
	appended, whole, inMem := x.Stats().Appended, x.Stats().WholeReads, x.Stats().InMemory
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "puffin"})
	require.NoError(t, err)
	require.True(t, moved.Load())
	require.Equal(t, []hitKey{
		{"moved", "text", s.MessageCount() - 2, rev - 1},
		{"moved", "text", s.MessageCount() - 1, rev},
	}, hitKeys(res.Hits))
	require.Equal(t, appended+1, x.Stats().Appended, "read from what was appended")
	require.Equal(t, whole, x.Stats().WholeReads, "not read whole")
	require.Equal(t, inMem, x.Stats().InMemory, "not searched in memory")
	states, err := x.States(ctx)
	require.NoError(t, err)
	require.Equal(t, rev, states["moved"].Rev, "extended from the row the other handle wrote")
}

// TestSearchQueueWritesOneBatchAtATime: while another process holds the
// index's write lock, appends go on and the queue's timer tries one
// write at a time (each waiting searchFeedWait), not one per append:
// what is appended meanwhile joins the next write, and once the lock is
// free one write takes it all.
func TestSearchQueueWritesOneBatchAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st, x := openStore(t, t.TempDir(), jsonlstore.Options{}, nil)
		s := sessiontest.New("batched")
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "first", sessiontest.Epoch)))
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"})
		require.NoError(t, err)
		synctest.Wait()

		lock, err := sql.Open("sqlite", "file:"+filepath.Join(st.Dir(), x.file)+"?_txlock=immediate")
		require.NoError(t, err)
		defer lock.Close()
		tx, err := lock.Begin()
		require.NoError(t, err)
		before := x.Stats().FeedWrites
		const appends = 20
		for i := range appends {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, fmt.Sprintf("cormorant%d", i), sessiontest.Epoch)))
			_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
			time.Sleep(searchFlushDelay) // each append's timer has fired
			synctest.Wait()
		}
		// 20 appends over 2 s: a write waits searchFeedWait (1 s), the
		// next starts searchFlushDelay after it.
		require.LessOrEqual(t, x.Stats().FeedWrites-before, int64(3), "one write at a time")
		require.NoError(t, tx.Rollback())
		time.Sleep(searchFlushDelay + time.Duration(searchFeedWait))
		synctest.Wait()
		states, err := x.States(ctx)
		require.NoError(t, err)
		require.Equal(t, w.Revision(), states["batched"].Rev, "the queue written once the lock was free")
		require.Equal(t, 1+appends, states["batched"].Messages)
		require.NoError(t, w.Release(ctx))
	})
}

// TestSearchLeavesARecentRowToItsHolder: a row behind its log by appends
// all made within searchHolderWindow (by their records' times), in a
// session a live process holds, is searched beside the index and left
// for the holder's queue to write, however long the session waited
// before them; one behind by appends that span more, or of a session
// nobody holds, is written by the search. Either way the search finds
// what was appended.
func TestSearchLeavesARecentRowToItsHolder(t *testing.T) {
	ctx := t.Context()
	st, x := openStore(t, t.TempDir(), jsonlstore.Options{BlobThreshold: -1}, nil)
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 80) // 2 KiB a message: appends are deltas
	for _, id := range []session.SessionID{"held", "free"} {
		s := sessiontest.New(string(id))
		for i := range 20 {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("message%03d %s", i, filler), sessiontest.Epoch)))
		}
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
	}
	q := newQuietWriter(t, st.Dir(), "held")
	rowOf := func(id session.SessionID) searchdb.State {
		states, err := x.States(ctx)
		require.NoError(t, err)
		return states[id]
	}
	search := func(word string, want int) {
		t.Helper()
		res, err := st.Search(ctx, sessionstore.SearchQuery{Text: word})
		require.NoError(t, err)
		require.Len(t, res.Hits, want, "search %q", word)
	}
	// The holder's first append after taking the lease is a full record
	// (a search reads the session whole after it); the index is brought
	// past it.
	q.add(t, "warming up")
	x.holderWindow = 0
	search("nothing", 0)
	x.holderWindow = searchHolderWindow
	was := rowOf("held")

	// Held, appended to after a pause far longer than the window (the
	// holder's clock an hour on, and the log's time): found, and the row
	// left to the holder.
	q.skew.Store(int64(time.Hour))
	q.add(t, "heron one", "heron two")
	later := time.Unix(0, was.Proof.Mtime).Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(st.Dir(), "held", jsonlstore.LogFile), later, later))
	left := x.Stats().LeftToHolder
	search("heron", 2)
	require.Equal(t, left+1, x.Stats().LeftToHolder)
	require.Equal(t, was.Rev, rowOf("held").Rev, "left to the holder")

	// One more append, past the window after the first the row lacks (a
	// holder that does not index): the search writes them all.
	q.skew.Store(int64(time.Hour + searchHolderWindow + time.Second))
	rev := q.add(t, "heron three")
	search("heron", 3)
	require.Equal(t, left+1, x.Stats().LeftToHolder)
	require.Equal(t, rev, rowOf("held").Rev, "written by the search")

	// Nobody holds it: the search writes it.
	other, err := jsonlstore.Open(st.Dir(), jsonlstore.Options{BlobThreshold: -1})
	require.NoError(t, err)
	w, err := other.Acquire(ctx, "free", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := other.Load(ctx, "free")
	require.NoError(t, err)
	s, err := rec.Session()
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "egret", sessiontest.Epoch)))
	rev, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, other.Close())
	search("egret", 1)
	require.Equal(t, left+1, x.Stats().LeftToHolder)
	require.Equal(t, rev, rowOf("free").Rev, "written by the search")
}
