package jsonlstore

import (
	"context"
	"time"

	"github.com/sessionstore/sessionstore/summary"
)

// Being current, for List. The index is current when it holds every change
// completed before a List began. Events arrive after the change they
// announce, so the watcher proves it with a barrier (eventSource.Barrier):
// once the barrier's event is in, so is every earlier event; the watcher
// then polls what no watch covers and recomputes every due session at
// once, not waiting for the debounce.

// current reports whether the index reflects every change completed
// before the call: the watcher has completed its initial scan, and its
// goroutine confirms it has taken in every event up to a barrier issued
// after the call, polled what no event covers, and recomputed every due
// session. It reports false (List then scans the disk itself) when the
// watcher cannot say so within syncWait.
func (w *watcher) current(ctx context.Context) bool {
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

func (w *watcher) requestSync(reply chan bool) {
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

func (w *watcher) issueBarrier() {
	tok, err := w.src.Barrier()
	if err != nil {
		w.answer(w.waiters, false)
		w.waiters = nil
		return
	}
	w.barrier, w.barrierTick = tok, w.ticks
}

// barrierReached: every event before the barrier has been taken in.
func (w *watcher) barrierReached() {
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
func (w *watcher) checkBarrier() {
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
func (w *watcher) syncNow() {
	if !w.rootWatched {
		w.rescan()
	} else {
		w.pollUnwatched()
	}
	w.flushDue()
}

func (w *watcher) answer(replies []chan bool, ok bool) {
	for _, r := range replies {
		r <- ok // buffered: never blocks
	}
}

// page answers q from the index: the same selection as a scan, over the
// summaries in memory, without copying any but the page's.
func (w *watcher) page(q summary.Query) (summary.Page, error) {
	sel, err := newPageSelection(q, func(i int) *summary.Summary { return &w.sums[i] })
	if err != nil {
		return summary.Page{}, err
	}
	w.mu.RLock()
	sel.reset(len(w.sums))
	for i := range w.sums {
		sel.offer(i)
	}
	entries, next := sel.page(sel.sorted())
	items := make([]summary.Summary, len(entries))
	for j, i := range entries {
		items[j] = w.sums[i]
	}
	w.mu.RUnlock()
	return summary.Page{Items: items, Next: next, Unreadable: w.ix.Unreadable()}, nil
}
