package jsonlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/searchtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// procModeIndexLock: open ROOT/.search/index.db with a connection of its
// own, begin a write transaction (BEGIN IMMEDIATE: the index's write
// lock, as a writer's queue or another search takes it), print
// "locked", hold it until stdin closes, roll back, print "released".
const procModeIndexLock = "index-lock"

// indexLockChild is procModeIndexLock.
func indexLockChild(ctx context.Context) error {
	db, err := sql.Open("sqlite", filepath.Join(os.Getenv(procDirEnv), searchFile))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}

// TestSearchDoesNotWaitForTheIndexWriteLock: while another process holds
// the index's write lock (a writer's queue, another search; here a
// helper process that keeps a write transaction open), a search does not
// wait for it. A session appended to since its row, its title changed,
// is read from what was appended and searched beside the index, whose
// row serves for the messages it holds: every search answers as the
// histories do, the hits carry the title as it is now, and the title
// the row holds is no longer found. Nothing is read whole, and the row
// is left to the writers. Once the lock is free, a search brings the
// row up to date, and the same queries give the same hits in the same
// order with the same scores: the hits from beside the index are ranked
// as the index ranks them once it holds them.
func TestSearchDoesNotWaitForTheIndexWriteLock(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	indexOf(st).SetHolderWindow(0) // the quiet writer does not index: every search writes what it read
	qs := searchWorkload(t, st, 11, 10)
	s := sessiontest.New("grown")
	require.NoError(t, s.SetTitle("osprey nest", session.TitleGenerated))
	for i := range 20 {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, searchGrowText("grown", 11, i), sessiontest.Epoch)))
	}
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	q := newQuietWriter(t, st.Dir(), "grown")
	q.add(t, "first words of the holder")
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"}) // the index holds every session
	require.NoError(t, err)
	before, err := indexOf(st).StatesOf(ctx, []session.SessionID{"grown"})
	require.NoError(t, err)

	// Appended since the row, by a process that does not index: a new
	// title, and messages of the vocabulary (ranked with the others').
	require.NoError(t, q.s.SetTitle("kestrel perch", session.TitleExplicit))
	var texts []string
	for i := range 6 {
		texts = append(texts, searchGrowText("grown", 12, i)+" gannet")
	}
	last := q.add(t, texts...)

	lock := startProc(t, procModeIndexLock, procEnv(st.Dir(), "grown", 0)...)
	require.Equal(t, "locked", lock.Next(t))
	qs = append(qs,
		sessionstore.SearchQuery{Text: "gannet", Limit: sessionstore.MaxSearchLimit},
		sessionstore.SearchQuery{Text: "kestrel", Limit: sessionstore.MaxSearchLimit},
		sessionstore.SearchQuery{Text: "osprey", Limit: sessionstore.MaxSearchLimit},
		sessionstore.SearchQuery{Text: "amber", Limit: 5},
		sessionstore.SearchQuery{Text: "ced* gannet", Limit: sessionstore.MaxSearchLimit, NoTools: true},
		sessionstore.SearchQuery{Text: `"amber basil"`, Limit: sessionstore.MaxSearchLimit},
	)
	whole, appended, inMem := indexOf(st).Stats().WholeReads, indexOf(st).Stats().Appended, indexOf(st).Stats().InMemory
	held := make([]sessionstore.SearchResult, len(qs))
	for i, qq := range qs {
		want, err := searchtest.Reference(ctx, st, qq)
		require.NoError(t, err)
		held[i], err = st.Search(ctx, qq)
		require.NoError(t, err)
		if qq.Limit == sessionstore.MaxSearchLimit { // every hit: the reference ranks by its own scores
			require.Equal(t, hitKeys(want.Hits), hitKeys(held[i].Hits), "lock held: search %q", qq.Text)
		}
		for _, h := range held[i].Hits {
			if h.ID == "grown" {
				require.Equal(t, "kestrel perch", h.Title, "search %q", qq.Text)
			}
		}
	}
	_, still := lock.TryNext()
	require.False(t, still, "the helper held the lock throughout")
	require.Equal(t, whole, indexOf(st).Stats().WholeReads, "no session read whole")
	require.Equal(t, appended+int64(len(qs)), indexOf(st).Stats().Appended, "each search read what was appended")
	require.Equal(t, inMem+int64(len(qs)), indexOf(st).Stats().InMemory, "and searched it beside the index")
	var revs []uint64
	for _, h := range held[len(qs)-6].Hits {
		revs = append(revs, h.Revision)
	}
	slices.Sort(revs)
	require.Equal(t, []uint64{last - 5, last - 4, last - 3, last - 2, last - 1, last}, revs, "the new messages")
	require.Equal(t, []hitKey{{"grown", "title", -1, last - 5}}, hitKeys(held[len(qs)-5].Hits), "the new title")
	now, err := indexOf(st).StatesOf(ctx, []session.SessionID{"grown"})
	require.NoError(t, err)
	require.Equal(t, before["grown"].Rev, now["grown"].Rev, "the row was not written while the lock was held")

	lock.CloseStdin()
	require.Equal(t, "released", lock.Next(t))
	require.NoError(t, lock.Wait(t))
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"}) // brings the row up to date
	require.NoError(t, err)
	for i, qq := range qs {
		res, err := st.Search(ctx, qq)
		require.NoError(t, err)
		require.Zero(t, res.Indexed, "the index is current")
		require.Len(t, res.Hits, len(held[i].Hits), "search %q", qq.Text)
		for j, h := range res.Hits {
			g := held[i].Hits[j]
			require.Equal(t, [4]any{h.ID, h.Message, h.Field, h.Revision}, [4]any{g.ID, g.Message, g.Field, g.Revision}, "search %q: hit %d in the same place", qq.Text, j)
			require.Equal(t, h.Title, g.Title)
			require.True(t, h.UpdatedAt.Equal(g.UpdatedAt))
			require.InDelta(t, 0, (h.Score-g.Score)/math.Max(math.Abs(h.Score), 1e-9), 1e-9, "search %q: hit %d scored as the index scores it (%v, beside it %v)", qq.Text, j, h.Score, g.Score)
		}
	}
}

// procModeWriterLock: take ROOT/.search/writer exclusively (flock(2), as
// a writer's queue takes it before each write of the index), print
// "locked", hold it until stdin closes, print "released".
const procModeWriterLock = "writer-lock"

// writerLockChild is procModeWriterLock.
func writerLockChild() error {
	f, err := os.OpenFile(filepath.Join(os.Getenv(procDirEnv), SearchDir, "writer"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}

// TestSearchWritersTakeTurnsAcrossProcesses: the index has one writer at
// a time across processes (.search/writer). While a helper process holds
// the writer lock, an append's queued index write waits for it (the row
// stays as it was; the queue tries for searchRetries seconds) and a
// search does not (it finds the appended message from the log, beside
// the index); once the helper lets go, the queue writes the row.
func TestSearchWritersTakeTurnsAcrossProcesses(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	s := sessiontest.New("turns")
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "first words", sessiontest.Epoch)))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"}) // the index holds the session
	require.NoError(t, err)
	before, err := indexOf(st).StatesOf(ctx, []session.SessionID{"turns"})
	require.NoError(t, err)

	lock := startProc(t, procModeWriterLock, procEnv(st.Dir(), "turns", 0)...)
	require.Equal(t, "locked", lock.Next(t))
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, "avocet", sessiontest.Epoch)))
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err)
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "avocet"})
	require.NoError(t, err)
	require.Equal(t, []hitKey{{"turns", "text", 1, w.Revision()}}, hitKeys(res.Hits), "found beside the index")
	time.Sleep(300 * time.Millisecond) // the queue's timer (100 ms after the append) waits for the lock meanwhile
	now, err := indexOf(st).StatesOf(ctx, []session.SessionID{"turns"})
	require.NoError(t, err)
	require.Equal(t, before["turns"].Rev, now["turns"].Rev, "the row was not written while the helper held the writer lock")
	_, still := lock.TryNext()
	require.False(t, still, "the helper held the lock throughout")

	lock.CloseStdin()
	require.Equal(t, "released", lock.Next(t))
	require.NoError(t, lock.Wait(t))
	require.Eventually(t, func() bool {
		now, err := indexOf(st).StatesOf(ctx, []session.SessionID{"turns"})
		return err == nil && now["turns"].Rev == w.Revision()
	}, 30*time.Second, 5*time.Millisecond, "the queue wrote the row once the lock was free")
	require.NoError(t, w.Release(ctx))
}
