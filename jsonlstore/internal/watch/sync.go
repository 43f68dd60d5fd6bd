package watch

import (
	"context"
	"encoding/json"
	"io/fs"
	"time"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/summary"
)

// Being current, for List. The index is current when it holds every change
// completed before a List began. Events arrive after the change they
// announce, so the watcher proves it with a barrier (EventSource.Barrier):
// once the barrier's event is in, so is every earlier event; the watcher
// then polls what no watch covers and recomputes every due session at
// once, not waiting for the debounce.

// Current reports whether the index reflects every change completed
// before the call: the watcher has completed its initial scan, and its
// goroutine confirms it has taken in every event up to a barrier issued
// after the call, polled what no event covers, and recomputed every due
// session. It reports false (List then scans the disk itself) when the
// watcher cannot say so within a second, or ctx is done first.
func (w *Watcher) Current(ctx context.Context) bool {
	select {
	case <-w.ready:
	default:
		return false
	}
	reply := make(chan bool, 1)
	select {
	case w.syncReq <- reply:
	case <-w.done:
		return false
	case <-ctx.Done():
		return false
	}
	t := time.NewTimer(syncWait)
	defer t.Stop()
	select {
	case ok := <-reply:
		return ok
	case <-w.done:
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

func (w *Watcher) requestSync(reply chan bool) {
	if w.src == nil {
		w.syncNow()
		reply <- true
		return
	}
	if w.barrier != "" {
		// This List asked after the outstanding barrier was issued: the
		// barrier proves nothing about changes made since. It waits for
		// the next one.
		w.queued = append(w.queued, reply)
		return
	}
	w.waiters = append(w.waiters, reply)
	w.issueBarrier()
}

func (w *Watcher) issueBarrier() {
	tok, err := w.src.Barrier()
	if err != nil {
		w.answer(w.waiters, false)
		w.waiters = nil
		return
	}
	w.barrier, w.barrierTick = tok, w.ticks
}

// barrierReached: every event before the barrier has been taken in.
func (w *Watcher) barrierReached() {
	w.barrier = ""
	w.syncNow()
	w.answer(w.waiters, true)
	w.waiters, w.queued = w.queued, nil
	if len(w.waiters) > 0 {
		w.issueBarrier()
	}
}

// checkBarrier gives up on a barrier whose event has not come within two
// poll intervals (lost), so that later Lists are not kept waiting for it.
func (w *Watcher) checkBarrier() {
	if w.barrier == "" || w.ticks-w.barrierTick < 2 {
		return
	}
	w.barrier = ""
	w.answer(w.waiters, false)
	w.waiters, w.queued = w.queued, nil
	if len(w.waiters) > 0 {
		w.issueBarrier()
	}
}

// syncNow makes the index current with what events have announced and
// with what no event covers.
func (w *Watcher) syncNow() {
	if !w.rootWatched {
		w.rescan()
	} else {
		w.pollUnwatched()
	}
	w.flushDue()
}

func (w *Watcher) answer(replies []chan bool, ok bool) {
	for _, r := range replies {
		r <- ok // buffered: never blocks
	}
}

// Page answers q from the index: the same selection as a scan of the
// store (summary.Selection), over the summaries in memory, without copying
// any but the page's. Call it once Current reports true. Errors: those of
// summary.NewSelection.
func (w *Watcher) Page(q summary.Query) (summary.Page, error) {
	page, _, err := w.PageWithLeases(q)
	return page, err
}

// PageWithLeases is Page, with the state of each listed session's lease
// record when the watcher last looked at the lease status the summary
// carries: a listing that finds the record unchanged (LeaseFile.Unchanged)
// knows that no acquisition, heartbeat or release has happened since.
func (w *Watcher) PageWithLeases(q summary.Query) (summary.Page, []LeaseFile, error) {
	sel, err := summary.NewSelection(q, func(i int) *summary.Summary { return &w.sums[i] })
	if err != nil {
		return summary.Page{}, nil, err
	}
	key, err := json.Marshal(q) // the query, as the page it selected is kept under
	if err != nil {
		return summary.Page{}, nil, err
	}
	w.mu.RLock()
	entries, next, ok := w.keptPage(string(key))
	if !ok {
		sel.Reset(len(w.sums))
		for i := range w.sums {
			sel.Offer(i)
		}
		entries, next = sel.Page(sel.Sorted())
		w.keepPage(string(key), entries, next)
	}
	items := make([]summary.Summary, len(entries))
	leases := make([]LeaseFile, len(entries))
	for j, i := range entries {
		items[j], leases[j] = w.sums[i], LeaseFile{w.leaseFiles[i]}
	}
	w.mu.RUnlock()
	return summary.Page{Items: items, Next: next, Unreadable: w.ix.Unreadable()}, leases, nil
}

// keptPage returns the page last selected for the query encoded as key,
// if the summaries have not changed since. The caller holds w.mu.
func (w *Watcher) keptPage(key string) (entries []int, next string, ok bool) {
	p := &w.lastPage
	p.Lock()
	defer p.Unlock()
	if !p.ok || p.gen != w.gen || p.key != key {
		return nil, "", false
	}
	return p.entries, p.next, true
}

// keepPage keeps the page selected for the query encoded as key, for the
// summaries as they are now. The caller holds w.mu.
func (w *Watcher) keepPage(key string, entries []int, next string) {
	p := &w.lastPage
	p.Lock()
	p.key, p.gen, p.entries, p.next, p.ok = key, w.gen, entries, next, true
	p.Unlock()
}

// LeaseFile is the state of a session's lease record when the watcher
// last looked at the session's lease.
type LeaseFile struct{ s vfs.State }

// Unchanged reports whether fi, the lease record as stated now, is the
// record as it was then (false when the watcher does not know).
func (l LeaseFile) Unchanged(fi fs.FileInfo) bool {
	return l.s != (vfs.State{}) && vfs.StateOf(fi) == l.s
}
