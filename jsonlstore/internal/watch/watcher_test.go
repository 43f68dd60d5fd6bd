package watch

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The watcher tests that involve time run in a synctest bubble, on a
// simulated store (fakeDisk), with a fake event source the test feeds: the
// bubble's clock is fake, so debounce and polling are exact and instant.
// The fixtures are in fixtures_test.go; fsnotify_test.go runs the real
// source on temporary directories, and jsonlstore's watch tests the
// watcher of a real store.

// TestWatchDebounce: a burst of events for one session within the
// debounce window causes exactly one recomputation, at the end of the
// window, which sees the burst's last append; a sustained stream of 1,000
// events a second causes about ten a second, never two within the
// window, and the last append is always picked up.
func TestWatchDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 1)
		ss.create("quiet", 1)
		ss.startWatcher(nil)
		ss.resetRecomputes()

		// A burst: 50 appends, one every millisecond.
		t0 := time.Now()
		for range 50 {
			ss.appendRev("a")
			ss.src.emit("a/"+logFile, fsnotify.Write)
			ss.src.emit("a/"+summaryFile, fsnotify.Write)
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		require.Empty(t, ss.recomputes("a"), "nothing before the window ends")
		time.Sleep(time.Until(t0.Add(debounce)))
		synctest.Wait()
		require.Equal(t, []time.Time{t0.Add(debounce)}, ss.recomputes("a"))
		require.Equal(t, ss.want(), indexed(t, ss.w.ix), "the burst's last append is seen")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, ss.recomputes("a"), 1, "nothing more without events")
		require.Empty(t, ss.recomputes("quiet"))

		// A stream: 1,000 appends a second for a second.
		ss.resetRecomputes()
		t1 := time.Now()
		for range 1000 {
			ss.appendRev("a")
			ss.src.emit("a/"+logFile, fsnotify.Write)
			time.Sleep(time.Millisecond)
		}
		last := time.Now()
		time.Sleep(debounce)
		synctest.Wait()
		at := ss.recomputes("a")
		require.GreaterOrEqual(t, len(at), 9)
		require.LessOrEqual(t, len(at), 11)
		for i := 1; i < len(at); i++ {
			require.GreaterOrEqual(t, at[i].Sub(at[i-1]), debounce, "two recomputations within the window")
		}
		require.False(t, at[0].Before(t1.Add(debounce)))
		require.False(t, at[len(at)-1].After(last.Add(debounce)))
		require.Equal(t, ss.want(), indexed(t, ss.w.ix), "the stream's last append is seen")
	})
}

// TestWatchIgnoresIrrelevantEvents: events about the lease record's
// temporary files, a holder's touch of the lock file, forensic copies and
// leftovers schedule nothing; an event about the summary file schedules a
// look, which recomputes only if the log changed; one about the lease
// record a look at the lease, which recomputes nothing if the log did not
// change.
func TestWatchIgnoresIrrelevantEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 2)
		ss.startWatcher(nil)
		ss.resetRecomputes()
		inspected := ss.disk.inspections("a")
		ss.appendRev("a")
		ss.src.emit("a/lease.json.tmp-1234", fsnotify.Create)
		ss.src.emit("a/lease.lock", fsnotify.Chmod)
		ss.src.emit("a/"+forensicDir+"/x", fsnotify.Create)
		ss.src.emit(".tmp-a-1234", fsnotify.Create)
		time.Sleep(debounce)
		synctest.Wait()
		require.Empty(t, ss.recomputes("a"), "nothing scheduled")
		require.Equal(t, inspected, ss.disk.inspections("a"), "nothing scheduled")
		ss.src.emit("a/"+summaryFile, fsnotify.Write)
		time.Sleep(debounce)
		synctest.Wait()
		require.Len(t, ss.recomputes("a"), 1, "the log changed")
		require.Equal(t, ss.want(), indexed(t, ss.w.ix))
		ss.src.emit("a/"+summaryFile, fsnotify.Write)
		time.Sleep(debounce)
		synctest.Wait()
		require.Len(t, ss.recomputes("a"), 1, "the log did not change: a stat, no recompute")
		inspected = ss.disk.inspections("a")
		ss.disk.acquire("a", "agent")
		ss.src.emit("a/lease.json", fsnotify.Create)
		time.Sleep(debounce)
		synctest.Wait()
		require.Len(t, ss.recomputes("a"), 1, "the lease changed, not the log: no recompute")
		require.Equal(t, inspected+1, ss.disk.inspections("a"), "one look at the lease")
	})
}

// TestWatchOverflowRescans: when the source reports lost events, the
// watcher rescans at once and sees changes no event announced.
func TestWatchOverflowRescans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 1)
		ss.create("b", 1)
		ss.startWatcher(nil)
		time.Sleep(ss.poll / 2) // before any poll
		t0 := time.Now()
		ss.appendRev("a")
		ss.remove("b")
		ss.create("c", 3)
		synctest.Wait()
		require.Equal(t, map[session.SessionID]uint64{"a": 1, "b": 1}, indexed(t, ss.w.ix))
		ss.src.errs <- fmt.Errorf("read: %w", fsnotify.ErrEventOverflow)
		synctest.Wait()
		require.Equal(t, ss.want(), indexed(t, ss.w.ix))
		require.Equal(t, t0, time.Now(), "at once")
		require.True(t, ss.src.isWatched("c"), "the new session is watched")

		// Right after a recomputation, the rescan keeps to the debounce.
		ss.appendRev("a")
		ss.src.errs <- fsnotify.ErrEventOverflow
		synctest.Wait()
		require.NotEqual(t, ss.want(), indexed(t, ss.w.ix))
		time.Sleep(debounce)
		synctest.Wait()
		require.Equal(t, ss.want(), indexed(t, ss.w.ix))
	})
}

// TestWatchLimitPolls: directories the kernel refuses to watch (ENOSPC
// from inotify) are polled, and their changes are seen within two poll
// intervals; the directories watched before the limit keep their events.
func TestWatchLimitPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.refuse = func(path string) error {
			if path == simRoot+"/b" {
				return fmt.Errorf("inotify_add_watch: %w", syscall.ENOSPC)
			}
			return nil
		}
		ss := newSimStore(t, src)
		for _, id := range []session.SessionID{"a", "b", "c"} {
			ss.create(id, 1)
		}
		ss.startWatcher(nil)
		require.True(t, src.isWatched("a"))
		require.False(t, src.isWatched("b"), "refused")
		require.False(t, src.isWatched("c"), "not tried once the limit is hit")
		poll := ss.poll

		time.Sleep(poll / 2)
		ss.appendRev("b")
		ss.appendRev("c")
		ss.appendRev("c")
		ss.create("d", 1) // announced: the root is watched
		src.emit("d", fsnotify.Create)
		ss.appendRev("a")
		src.emit("a/"+logFile, fsnotify.Write)
		time.Sleep(debounce)
		synctest.Wait()
		got := indexed(t, ss.w.ix)
		require.Equal(t, uint64(2), got["a"], "events still drive watched sessions")
		require.Equal(t, uint64(1), got["d"])
		time.Sleep(2*poll - debounce)
		synctest.Wait()
		require.Equal(t, ss.want(), indexed(t, ss.w.ix), "converged within two poll intervals")
	})
}

// TestWatchBudgetPolls: beyond its own budget of watched directories (the
// macOS descriptor budget) the watcher polls.
func TestWatchBudgetPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ids := []session.SessionID{"a", "b", "c", "d", "e"}
		for _, id := range ids {
			ss.create(id, 1)
		}
		ss.startWatcher(func(o *Options) { o.Budget = 3 })
		watched := 0
		for _, id := range ids {
			if ss.src.isWatched(string(id)) {
				watched++
			}
		}
		require.Equal(t, 2, watched, "the root and two sessions")
		require.Equal(t, 3, ss.w.budget)
		for _, id := range ids {
			ss.appendRev(id) // no events at all
		}
		time.Sleep(2 * ss.poll)
		synctest.Wait()
		require.Equal(t, ss.want(), indexed(t, ss.w.ix))

		// A deleted session frees its watch for a polled one.
		ss.remove("a")
		ss.src.emit("a", fsnotify.Rename)
		time.Sleep(2 * ss.poll)
		synctest.Wait()
		require.Equal(t, ss.want(), indexed(t, ss.w.ix))
		watched = 0
		for _, id := range ids {
			if ss.src.isWatched(string(id)) {
				watched++
			}
		}
		require.Equal(t, 2, watched)
	})
}

// TestWatchEventsLost: with a source that never delivers anything, the
// watcher still converges within two poll intervals of any change.
func TestWatchEventsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.silent = true
		ss := newSimStore(t, src)
		ss.create("a", 1)
		ss.create("b", 1)
		ss.startWatcher(nil)
		poll := ss.poll

		// Just after a full rescan: the worst case.
		time.Sleep(rescanTicks*poll + time.Millisecond)
		synctest.Wait()
		ss.appendRev("a")
		ss.remove("b")
		ss.create("c", 2)
		time.Sleep(2*poll - 2*time.Millisecond)
		synctest.Wait()
		require.NotEqual(t, ss.want(), indexed(t, ss.w.ix), "watched sessions wait for the full rescan")
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, ss.want(), indexed(t, ss.w.ix), "converged within two poll intervals")

		// The watcher cannot confirm the index is current (its barrier is
		// lost too): List scans instead.
		require.False(t, ss.w.Current(context.Background()))
	})
}

// TestWatchPollsWithoutSource: with no event source at all (a store on a
// simulated file system) the watcher is a poller.
func TestWatchPollsWithoutSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, nil)
		ss.create("a", 1)
		ss.startWatcher(nil)
		ss.appendRev("a")
		ss.create("b", 1)
		time.Sleep(ss.poll)
		synctest.Wait()
		require.Equal(t, ss.want(), indexed(t, ss.w.ix))
	})
}

// TestWatchCreateDelete: sessions created (renamed in) and deleted
// (renamed to trash) are picked up from the root's events; a session
// created again under a deleted one's name, with a lower revision,
// replaces it; and subscribers converge to all of it.
func TestWatchCreateDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 1)
		ss.startWatcher(nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sub := ss.w.ix.Subscribe(ctx)
		view := map[session.SessionID]uint64{}
		// drain takes every change the subscription has to deliver: once
		// all goroutines are blocked, its sender is blocked on the send
		// if, and only if, it has one.
		drain := func() {
			for {
				synctest.Wait()
				select {
				case c := <-sub.C():
					if c.Deleted {
						delete(view, c.ID)
					} else {
						view[c.ID] = c.Summary.Revision
					}
				default:
					return
				}
			}
		}

		ss.create("n", 3)
		ss.src.emit("n", fsnotify.Create)
		time.Sleep(debounce)
		drain()
		require.Equal(t, ss.want(), view)
		require.True(t, ss.src.isWatched("n"))

		ss.remove("n")
		ss.src.emit("n", fsnotify.Rename)
		ss.src.emit(".trash-n-1234", fsnotify.Create)
		time.Sleep(debounce)
		drain()
		require.Equal(t, ss.want(), view)
		require.False(t, ss.src.isWatched("n"), "the watch went with the directory")

		ss.create("n", 3)
		ss.src.emit("n", fsnotify.Create)
		ss.remove("n")
		ss.src.emit("n", fsnotify.Rename)
		ss.create("n", 1)
		ss.src.emit("n", fsnotify.Create)
		time.Sleep(debounce)
		drain()
		require.Equal(t, ss.want(), view)
		require.Equal(t, ss.want(), indexed(t, ss.w.ix))

		// Deleted and created again with the root's events lost (only one
		// about the new log arrives): the new directory is recognised by
		// its identity, watched, and its lower revision wins.
		ss.appendRev("n")
		ss.src.emit("n/"+logFile, fsnotify.Write)
		time.Sleep(debounce)
		drain()
		ss.remove("n")
		ss.create("n", 1)
		ss.src.emit("n/"+logFile, fsnotify.Create)
		time.Sleep(debounce)
		drain()
		require.Equal(t, map[session.SessionID]uint64{"a": 1, "n": 1}, view)
		require.True(t, ss.src.isWatched("n"))
	})
}

// TestWatchCompaction: a log replaced by rename (a new identity, the same
// revision) is picked up.
func TestWatchCompaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 5)
		ss.startWatcher(nil)
		before, ok := ss.w.ix.Get("a")
		require.True(t, ok)
		ss.resetRecomputes()
		ss.compact("a")
		ss.src.emit("a/"+archiveDir, fsnotify.Create)
		ss.src.emit("a/"+logFile, fsnotify.Create)
		time.Sleep(debounce)
		synctest.Wait()
		require.Len(t, ss.recomputes("a"), 1)
		after, ok := ss.w.ix.Get("a")
		require.True(t, ok)
		require.Equal(t, before.Revision, after.Revision)
		require.Less(t, after.Sizes.LogBytes, before.Sizes.LogBytes)
	})
}

// TestWatchListFromIndex: once the watcher runs, List answers from its
// index (Page), after Current's barrier proves every earlier event was
// taken in and due sessions were recomputed; it sees a change made just
// before it, though the debounce has not elapsed.
func TestWatchListFromIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 1)
		ss.create("b", 1)
		ss.startWatcher(nil)
		ctx := context.Background()
		ss.appendRev("b")
		ss.src.emit("b/"+logFile, fsnotify.Write)
		t0 := time.Now()
		require.True(t, ss.w.Current(ctx))
		require.Equal(t, t0, time.Now())
		page, err := ss.w.Page(summary.Query{})
		require.NoError(t, err)
		require.Len(t, page.Items, 2)
		require.Equal(t, session.SessionID("b"), page.Items[0].ID, "newest first")
		require.Equal(t, uint64(2), page.Items[0].Revision)

		// A page is selected once until the summaries change: another
		// query, the same query again, then a change, each as a new
		// selection would answer it.
		byID, err := ss.w.Page(summary.Query{Order: summary.OrderIDAsc})
		require.NoError(t, err)
		require.Equal(t, session.SessionID("a"), byID.Items[0].ID)
		again, err := ss.w.Page(summary.Query{})
		require.NoError(t, err)
		require.Equal(t, page, again)
		ss.appendRev("a")
		ss.appendRev("a") // revision 3: updated after b (the fake disk's time follows the revision)
		ss.src.emit("a/"+logFile, fsnotify.Write)
		require.True(t, ss.w.Current(ctx))
		changed, err := ss.w.Page(summary.Query{})
		require.NoError(t, err)
		require.Equal(t, session.SessionID("a"), changed.Items[0].ID, "a is the newest now")
		require.Equal(t, uint64(3), changed.Items[0].Revision)
		first, err := ss.w.Page(summary.Query{Limit: 1})
		require.NoError(t, err)
		require.Len(t, first.Items, 1)
		require.NotEmpty(t, first.Next)
		rest, err := ss.w.Page(summary.Query{Limit: 1, Cursor: first.Next})
		require.NoError(t, err)
		require.Equal(t, session.SessionID("b"), rest.Items[0].ID, "the cursor is part of the query")
		require.Equal(t, session.SessionID("a"), first.Items[0].ID)
	})
}

// TestWatchClose: closing the watcher stops its goroutine, closes its
// event source and its subscribers' channels, inside the bubble (which
// itself fails the test if a goroutine is left).
func TestWatchClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSimStore(t, newFakeSource())
		ss.create("a", 1)
		ss.startWatcher(nil)
		ch, err := ss.w.Subscribe(context.Background())
		require.NoError(t, err)
		<-ch
		ss.w.Close()
		<-ss.w.done
		_, ok := <-ch
		require.False(t, ok)
		require.True(t, ss.src.closed)
		_, err = ss.w.Subscribe(context.Background())
		require.ErrorIs(t, err, sessionstore.ErrClosed)
	})
}
