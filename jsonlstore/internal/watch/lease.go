package watch

import (
	"context"
	"errors"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Leases. Every summary the watcher publishes carries the session's lease
// status, and a change of it — an acquisition, a release, a takeover, a
// holder's death — is a change of its own, with the summary otherwise
// unchanged. Heartbeats are not changes: a status that differs only in
// the holder's last sign of life (Holder.HeartbeatAt, HeartbeatAge) is not
// published again, though every new revision carries the latest one.
//
// The watcher learns of a change in these ways:
//
//   - Every acquisition, heartbeat and release replaces the lease record,
//     and replacing the lock file is a change of the directory: each is
//     an event (AffectsLease), and the lease is looked at debounce later.
//     A holder's touch changes only the lock file's times, which the
//     watcher lets go.
//   - A holder that dies writes nothing: the kernel drops its lock, and no
//     event says so. So the leases last seen held are inspected again at
//     every poll tick (probeHeld), on the scan goroutine: a held lease
//     whose holder is killed shows stale within one poll interval (a
//     second by default) and a debounce. Only held leases cost anything,
//     an inspection each (a few system calls).
//   - Where no event comes (a directory beyond the watch limits, a
//     watcher without events, lost events), the polls and full rescans
//     that check the logs also stat the lease record, and a new one is
//     looked at as an event's would be.

// leaseFileOf returns the state of session id's lease record, zero when
// there is none.
func (w *Watcher) leaseFileOf(id session.SessionID) vfs.State {
	fi, err := w.disk.StatLease(id)
	if err != nil {
		return vfs.State{}
	}
	return vfs.StateOf(fi)
}

// lookLease inspects session id's lease now and records it as what the
// watcher publishes (the caller publishes it). The record is stated before
// the inspection, so that a record written during it is seen as new
// later. A lease that cannot be inspected (the session going away, an I/O
// error) is unknown.
func (w *Watcher) lookLease(id session.SessionID, t *tracked) summary.LeaseStatus {
	t.leaseDue = false
	t.leaseFile = w.leaseFileOf(id)
	ls, err := w.disk.Lease(context.Background(), id)
	switch {
	case errors.Is(err, sessionstore.ErrClosed):
		return t.lease // closing: nothing to report
	case err != nil:
		ls = summary.LeaseStatus{}
	}
	w.setLease(id, t, ls)
	return ls
}

// refreshLease looks at session id's lease, whose summary is current, and
// publishes the summary again if the lease changed.
func (w *Watcher) refreshLease(id session.SessionID, t *tracked) {
	before := t.lease
	ls := w.lookLease(id, t)
	if summary.SameLease(before, ls) {
		return
	}
	// Only this goroutine writes sums and slot: it reads them unlocked.
	i, ok := w.slot[id]
	if !ok {
		return // unreadable: no summary to carry the lease
	}
	sum := w.sums[i]
	sum.Lease = ls
	w.put(sum)
}

// setLease records ls as session id's published lease status.
func (w *Watcher) setLease(id session.SessionID, t *tracked, ls summary.LeaseStatus) {
	t.lease = ls
	if ls.State == summary.LeaseHeld {
		w.held[id] = struct{}{}
	} else {
		delete(w.held, id)
	}
}

// anyHeld reports whether some lease was last seen held.
func (w *Watcher) anyHeld() bool { return len(w.held) > 0 }

// heldIDs returns the sessions whose lease was last seen held, for a scan
// to probe.
func (w *Watcher) heldIDs() []session.SessionID {
	ids := make([]session.SessionID, 0, len(w.held))
	for id := range w.held {
		ids = append(ids, id)
	}
	return ids
}

// probeHeld inspects the leases of ids, on the scan goroutine.
func (w *Watcher) probeHeld(ids []session.SessionID) map[session.SessionID]summary.LeaseStatus {
	out := make(map[session.SessionID]summary.LeaseStatus, len(ids))
	for _, id := range ids {
		if w.stopping() {
			break
		}
		ls, err := w.disk.Lease(context.Background(), id)
		switch {
		case errors.Is(err, sessionstore.ErrClosed):
			return out // closing
		case err != nil:
			ls = summary.LeaseStatus{}
		}
		out[id] = ls
	}
	return out
}

// applyHeld looks again, on the watcher's goroutine, at the held leases a
// scan saw change. It does not publish what the scan saw: an event may
// have brought a newer status since.
func (w *Watcher) applyHeld(seen map[session.SessionID]summary.LeaseStatus) {
	for id, ls := range seen {
		if t := w.sessions[id]; t != nil && !summary.SameLease(t.lease, ls) {
			t.leaseDue = true
			w.check(id)
		}
	}
}
