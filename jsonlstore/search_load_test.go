package jsonlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/session"
)

// logReadFS counts the bytes read from the sessions' logs.
type logReadFS struct {
	vfs.FS
	n atomic.Int64
}

func (c *logReadFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != LogFile {
		return f, err
	}
	return &logReadFile{File: f, n: &c.n}, nil
}

type logReadFile struct {
	vfs.File
	n *atomic.Int64
}

func (f *logReadFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.n.Add(int64(n))

	return n, err
}

func (f *logReadFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))

	return n, err
}

// quietWriter holds a session through a handle on a store's root opened
// without the search index (a process that does not index it).
type quietWriter struct {
	st *Store
	w  sessionstore.Writer
	s  *session.Session
}

func newQuietWriter(t *testing.T, dir string, id session.SessionID) *quietWriter {
	t.Helper()
	ctx := t.Context()
	other, err := Open(dir, Options{BlobThreshold: -1})
	require.NoError(t, err)
	w, err := other.Acquire(ctx, id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := other.Load(ctx, id)
	require.NoError(t, err)
	s, err := rec.Session()
	require.NoError(t, err)
	q := &quietWriter{st: other, w: w, s: s}
	t.Cleanup(func() {
		require.NoError(t, w.Release(context.Background()))
		require.NoError(t, other.Close())
	})
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

// TestSearchCatchUpReadsWhatWasAppended: a search that finds a session's
// row behind its log (appended by a process that did not index it) reads
// the records appended since the row's revision and the messages they
// add, not the session: here a few KiB of a log of 600 KiB, whose
// messages are all in its one full record. What it finds is what the
// history says, and its row is extended, not replaced: the messages it
// held keep the revisions they appeared at.
func TestSearchCatchUpReadsWhatWasAppended(t *testing.T) {
	ctx := t.Context()
	st, err := Open(t.TempDir(), Options{Search: searchindex.New(), BlobThreshold: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	indexOf(st).SetHolderWindow(0) // the quiet writer does not index: every search writes what it read
	s := sessiontest.New("grown")
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 80) // 2 KiB a message, inline
	for i := range 300 {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("message%03d %s", i, filler), sessiontest.Epoch)))
	}
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	// An agent holds it from another process that does not index (its
	// first append after taking the lease encodes the whole conversation).
	q := newQuietWriter(t, st.Dir(), "grown")
	q.add(t, "hello again", "and again")
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"}) // the index holds it
	require.NoError(t, err)

	for round := range 3 {
		rev := q.add(t, fmt.Sprintf("gannet%d flies", round), fmt.Sprintf("gannet%d dives", round))
		s := q.s
		counted := &logReadFS{FS: st.fs}
		swapFS(st, counted)
		res, err := st.Search(ctx, sessionstore.SearchQuery{Text: fmt.Sprintf("gannet%d", round)})
		swapFS(st, counted.FS)
		require.NoError(t, err)
		require.Equal(t, 1, res.Indexed, "round %d", round)
		require.Equal(t, []hitKey{
			{"grown", "text", s.MessageCount() - 2, rev - 1},
			{"grown", "text", s.MessageCount() - 1, rev},
		}, hitKeys(res.Hits), "round %d", round)
		t.Logf("round %d: %d bytes of the logs read", round, counted.n.Load())
		require.Less(t, counted.n.Load(), int64(200<<10), "round %d: bytes of the logs read", round)
	}
	states, err := indexOf(st).States(ctx)
	require.NoError(t, err)
	require.Equal(t, 308, states["grown"].Messages)
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "message007"})
	require.NoError(t, err)
	require.Equal(t, []hitKey{{"grown", "text", 7, 1}}, hitKeys(res.Hits), "an old message keeps its revision")
	requireSameAsHistory(t, st, []sessionstore.SearchQuery{{Text: "gannet1", Limit: sessionstore.MaxSearchLimit}, {Text: "lorem", Limit: 5}}, "after")
}

// TestSearchWaitsForAnIndexBusyAtOpen: a search whose index another
// process keeps from being opened for a moment (SQLite recovering the
// WAL, a checkpoint, here a connection holding the file's lock) waits
// for it, as for a write, instead of reading every session into memory.
func TestSearchWaitsForAnIndexBusyAtOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		dir := t.TempDir()
		st, err := Open(dir, Options{Search: searchindex.New()})
		require.NoError(t, err)
		for i := range 3 {
			w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.Titled(fmt.Sprintf("s%d", i), fmt.Sprintf("tern%d", i))), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
		}
		_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"})
		require.NoError(t, err)
		require.NoError(t, st.Close())

		lock, err := sql.Open("sqlite", "file:"+filepath.Join(dir, searchFile)+"?_pragma=locking_mode(EXCLUSIVE)")
		require.NoError(t, err)
		lock.SetMaxOpenConns(1)
		_, err = lock.Exec("BEGIN EXCLUSIVE")
		require.NoError(t, err)
		released := make(chan struct{})
		go func() {
			defer close(released)
			time.Sleep(time.Second)
			_, _ = lock.Exec("ROLLBACK")
			_ = lock.Close()
		}()

		fresh, err := Open(dir, Options{Search: searchindex.New()})
		require.NoError(t, err)
		defer func() { require.NoError(t, fresh.Close()) }()
		res, err := fresh.Search(ctx, sessionstore.SearchQuery{Text: "tern1"})
		require.NoError(t, err)
		<-released
		require.Zero(t, res.Indexed, "the index was current: nothing read from the logs")
		require.Equal(t, []hitKey{{"s1", "title", -1, 1}}, hitKeys(res.Hits))
	})
}
