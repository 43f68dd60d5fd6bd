package watch

import (
	"time"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Polling: what the watcher does to converge whatever events are lost —
// full rescans, and polls of the sessions no watch covers.

// rescan lists the root and brings every session up to date; sessions no
// longer listed are forgotten. It costs a stat per session plus a
// recomputation per changed one, on the watcher's goroutine: for the
// initial scan, after lost events, and for a Current when the root itself
// is not watched. Periodic scans go through startScan.
func (w *Watcher) rescan() {
	w.limited = false // kernel limits may have eased: try again
	ids, err := w.disk.IDs()
	if err != nil {
		if !w.listFailed {
			w.logger.Warn("jsonlstore: watcher cannot list the root", "err", err)
		}
		w.listFailed = true
		return
	}
	w.listFailed = false
	listed := make(map[session.SessionID]bool, len(ids))
	for _, id := range ids {
		if w.stopping() {
			return
		}
		listed[id] = true
		if t := w.sessions[id]; t != nil && !t.watched {
			w.watchSession(id, t)
		}
		w.check(id)
	}
	for id := range w.sessions {
		if !listed[id] {
			w.check(id) // gone, or created after the listing
		}
	}
	if !w.limited {
		w.limitLogged = false
	}
}

// scanResult is what a periodic scan saw: the files of the sessions it
// looked at, and the lease status of those last seen held.
type scanResult struct {
	full   bool // the root was listed: a session not in files is gone
	files  map[session.SessionID]scannedFiles
	held   map[session.SessionID]summary.LeaseStatus
	failed error // the root could not be listed
}

// scannedFiles is what a scan saw of one session's files.
type scannedFiles struct {
	log   vfs.State // zero: no readable log
	lease vfs.State // zero: no lease record
}

// startScan starts a periodic scan: of every session (full), or of those
// no watch covers, and of the leases last seen held (probeHeld). Its
// system calls — two stats per session, an inspection per held lease —
// run on their own goroutine, so that a scan of many sessions does not
// hold up events and Currents; the watcher's goroutine then looks again at
// what changed (applyScan). One scan runs at a time: a tick that finds one
// running skips its own.
func (w *Watcher) startScan(full bool) {
	if w.scanning {
		return
	}
	var ids []session.SessionID
	if !full {
		ids = make([]session.SessionID, 0, len(w.polled))
		for id := range w.polled {
			ids = append(ids, id)
		}
	}
	held := w.heldIDs()
	w.scanning = true
	w.scans.Go(func() {
		res := scanResult{full: full}
		if full {
			ids, res.failed = w.disk.IDs()
		}
		res.files = make(map[session.SessionID]scannedFiles, len(ids))
		for _, id := range ids {
			if w.stopping() {
				return
			}
			var sf scannedFiles
			if fi, err := w.disk.StatLog(id); err == nil {
				sf.log = vfs.StateOf(fi)
			}
			sf.lease = w.leaseFileOf(id)
			res.files[id] = sf
		}
		res.held = w.probeHeld(held)
		select {
		case w.scanned <- res:
		case <-w.stop:
		}
	})
}

// applyScan brings up to date the sessions whose log or lease record a
// periodic scan saw changed (against what the watcher last looked at),
// those whose held lease it saw change (a holder that died), and those it
// did not see at all (created since, or gone). A change since the scan's
// stat is not missed: it has an event, or the next scan sees it.
func (w *Watcher) applyScan(res scanResult) {
	w.applyHeld(res.held)
	if res.failed != nil {
		if !w.listFailed {
			w.logger.Warn("jsonlstore: watcher cannot list the root", "err", res.failed)
		}
		w.listFailed = true
		return
	}
	if res.full {
		w.listFailed = false
		w.limited = false // kernel limits may have eased: try again
	}
	for id, sf := range res.files {
		t := w.sessions[id]
		if t != nil && !t.watched {
			w.watchSession(id, t)
		}
		if t != nil && sf.log != (vfs.State{}) && t.log == sf.log {
			if t.leaseFile == sf.lease {
				continue
			}
			t.leaseDue = true
		}
		w.check(id)
	}
	if res.full {
		for id := range w.sessions {
			if _, ok := res.files[id]; !ok {
				w.check(id)
			}
		}
		if !w.limited {
			w.limitLogged = false
		}
	}
}

// pollUnwatched brings the sessions no event covers up to date.
func (w *Watcher) pollUnwatched() {
	for id, t := range w.polled {
		if w.stopping() {
			return
		}
		w.watchSession(id, t)
		w.check(id)
	}
}

// check refreshes session id for a poll, keeping to the debounce: a
// session due already is left to the timer, and one recomputed less than
// debounce ago is scheduled rather than recomputed again (a poll can see
// a change whose event is still on its way, right after the recomputation
// an earlier event caused).
func (w *Watcher) check(id session.SessionID) {
	if t := w.sessions[id]; t != nil {
		if t.due {
			return
		}
		if time.Since(t.computed) < debounce {
			w.schedule(id)
			return
		}
	}
	w.refresh(id)
}
