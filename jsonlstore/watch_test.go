package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/listing"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// These tests run the watcher on real directories, with fsnotify.

// watchView follows a subscription until it equals want, failing after a
// deadline (no sleeps: it blocks on the channel).
func watchView(t *testing.T, ch <-chan summary.Change, view, want map[session.SessionID]uint64) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !mapsEqual(view, want) {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "channel closed; view %v, want %v", view, want)
			if c.Deleted {
				delete(view, c.ID)
			} else {
				view[c.ID] = c.Summary.Revision
			}
		case <-deadline.C:
			t.Fatalf("no convergence:\n view %v\n want %v", view, want)
		}
	}
}

func mapsEqual(a, b map[session.SessionID]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestWatchFsnotify runs the watcher on a real directory with fsnotify.
// The poll interval is an hour, so only events can make it converge.
func TestWatchFsnotify(t *testing.T) {
	ctx := context.Background()
	st := openTestStoreWith(t, Options{PollInterval: time.Hour})
	want := map[session.SessionID]uint64{}
	writers := map[session.SessionID]sessionstore.Writer{}
	create := func(id session.SessionID) {
		w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New(string(id))), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		writers[id], want[id] = w, 1
	}
	appendTo := func(id session.SessionID, n int) {
		s := sessiontest.New(string(id))
		for range n {
			rev, err := writers[id].Append(ctx, writers[id].Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
			want[id] = rev
		}
	}
	create("before-1")
	create("before-2")
	ch, err := st.Watch(ctx)
	require.NoError(t, err)
	view := map[session.SessionID]uint64{}
	watchView(t, ch, view, want)
	w := st.watch

	create("new-1")
	create("new-2")
	appendTo("before-1", 20)
	appendTo("new-1", 3)
	watchView(t, ch, view, want)

	require.NoError(t, writers["before-2"].Delete(ctx))
	delete(want, "before-2")
	appendTo("new-2", 1)
	watchView(t, ch, view, want)

	// List answers from the index, and sees what was just written.
	appendTo("new-1", 1)
	require.True(t, w.Current(ctx))
	page, err := st.List(ctx, summary.Query{Order: summary.OrderIDAsc})
	require.NoError(t, err)
	got := map[session.SessionID]uint64{}
	for _, s := range page.Items {
		got[s.ID] = s.Revision
		require.Equal(t, summary.LeaseHeld, s.Lease.State)
	}
	require.Equal(t, want, got)

	for _, wr := range writers {
		_ = wr.Release(ctx)
	}
	// Close stops the watcher, its event source and its goroutines (the
	// watch package's TestSourceClose looks inside; leaktest, run by
	// TestMain, fails the package on a goroutine left over).
	require.NoError(t, st.Close())
	for range ch { // closed with the store
	}
}

// TestWatchFsnotifyListReadsItsWrites: with the watcher running, List
// answers from the index yet never misses a change completed before it.
func TestWatchFsnotifyListReadsItsWrites(t *testing.T) {
	ctx := context.Background()
	st := openTestStoreWith(t, Options{PollInterval: time.Hour})
	_, err := st.Watch(ctx)
	require.NoError(t, err)
	list := func() summary.Page {
		t.Helper()
		page, ok, err := st.lister.Indexed(ctx, summary.Query{Order: summary.OrderIDAsc, Limit: summary.MaxLimit})
		require.NoError(t, err)
		require.True(t, ok, "answered from the index")
		viaList, err := st.List(ctx, summary.Query{Order: summary.OrderIDAsc, Limit: summary.MaxLimit})
		require.NoError(t, err)
		require.Len(t, viaList.Items, len(page.Items))
		return page
	}
	live := 0
	for i := range 20 {
		id := session.SessionID(fmt.Sprintf("s%02d", i))
		w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New(string(id))), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		page := list()
		require.Len(t, page.Items, live+1)
		require.Equal(t, id, page.Items[live].ID)
		rev, err := w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.New(string(id))))
		require.NoError(t, err)
		page = list()
		require.Equal(t, rev, page.Items[live].Revision)
		if i%3 == 0 {
			require.NoError(t, w.Delete(ctx))
			for _, s := range list().Items {
				require.NotEqual(t, id, s.ID)
			}
		} else {
			require.NoError(t, w.Release(ctx))
			live++
		}
	}
}

// TestWatchListScanChecksPage: the scan ranks sessions by the summary
// files that name the log on disk, but checks every item it returns as
// logfile.Current does; an item that fails the check (here a planted summary
// with the log's identity and size but another revision, and a time in
// the future) is recomputed from the log and the page selected again.
func TestWatchListScanChecksPage(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // a summary.json is made to lie, on purpose
	dir := st.Dir()
	for i, id := range []session.SessionID{"a", "b", "c"} {
		w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New(string(id))), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		for range i + 1 {
			_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, sessiontest.New(string(id))))
			require.NoError(t, err)
		}
		require.NoError(t, w.Release(ctx))
	}
	honest, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, honest.Items, 3)

	sf, ok := logfile.ReadSummary(st.fs, "a")
	require.True(t, ok)
	sf.Revision--
	sf.Summary.Revision = sf.Revision
	sf.Summary.UpdatedAt = time.Now().Add(24 * time.Hour)
	b, err := logfile.EncodeSummary(sf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", SummaryFile), b, layout.FilePerm))
	dirA, err := vfs.Sub(st.fs, "a")
	require.NoError(t, err)
	defer dirA.Close()
	k, ok := listing.Ranked(dirA, "a")
	require.True(t, ok, "the planted summary passes the ranking check")
	require.Equal(t, sf.Summary.UpdatedAt.UTC(), k.UpdatedAt.UTC())

	for _, limit := range []int{1, 2, 3} {
		page, err := st.List(ctx, summary.Query{Limit: limit})
		require.NoError(t, err)
		require.Len(t, page.Items, limit)
		for i := range page.Items {
			require.Equal(t, honest.Items[i].ID, page.Items[i].ID)
			require.Equal(t, honest.Items[i].Revision, page.Items[i].Revision)
			require.True(t, honest.Items[i].UpdatedAt.Equal(page.Items[i].UpdatedAt))
		}
	}
}

// TestWatchListLeasesAsTheyAre: a listing from the watcher's index shows
// each lease as it is at the listing, whatever the watcher has seen yet:
// another handle's acquisition and release show at once (a free lease is
// taken from the watcher only while its record is the one it looked at).
func TestWatchListLeasesAsTheyAre(t *testing.T) {
	ctx := context.Background()
	st := openTestStoreWith(t, Options{PollInterval: time.Hour})
	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New("a")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	_, err = st.Watch(ctx)
	require.NoError(t, err)
	other, err := Open(st.Dir(), Options{})
	require.NoError(t, err)
	defer other.Close()
	leaseOf := func() summary.LeaseState {
		t.Helper()
		page, ok, err := st.lister.Indexed(ctx, summary.Query{})
		require.NoError(t, err)
		require.True(t, ok, "answered from the index")
		require.Len(t, page.Items, 1)
		return page.Items[0].Lease.State
	}
	// The watcher looked at the free lease when it found the session: a
	// listing takes it from the watcher.
	before := st.lister.Counts.LeaseProbes.Load()
	require.Equal(t, summary.LeaseFree, leaseOf())
	require.Equal(t, before, st.lister.Counts.LeaseProbes.Load(), "a free lease the watcher looked at is not inspected again")
	for round := range 20 {
		require.Equal(t, summary.LeaseFree, leaseOf(), "round %d", round)
		w, err := other.Acquire(ctx, "a", sessionstore.AcquireOptions{Label: "other"})
		require.NoError(t, err)
		require.Equal(t, summary.LeaseHeld, leaseOf(), "round %d: acquired elsewhere", round)
		require.NoError(t, w.Release(ctx))
	}
	require.Equal(t, summary.LeaseFree, leaseOf())
}
