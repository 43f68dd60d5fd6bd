package history

import (
	"fmt"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Reader pulls the snapshots of a history in order. First is called
// first, then Next until it reports no more; Stop ends the pull.
type Reader struct {
	next func() (sessnap.Snapshot, error, bool)
	stop func()
	id   session.SessionID // the first snapshot's
}

// Pull returns a Reader of the history snaps yields. Its Stop must be
// called (iter.Pull2).
func Pull(snaps iter.Seq2[sessnap.Snapshot, error]) *Reader {
	next, stop := iter.Pull2(snaps)
	return &Reader{next: next, stop: stop}
}

// First returns the first snapshot, which names the session. Errors:
// ErrInvalidSnapshot for an empty history, and the sequence's own.
func (r *Reader) First() (sessnap.Snapshot, error) {
	snap, err, ok := r.next()
	switch {
	case !ok:
		return sessnap.Snapshot{}, fmt.Errorf("%w: an empty history", sessionstore.ErrInvalidSnapshot)
	case err != nil:
		return sessnap.Snapshot{}, err
	}
	r.id = snap.ID
	return snap, nil
}

// Next returns the snapshot after the last one returned, and false at the
// end of the history. Errors: ErrInvalidSnapshot for a snapshot of another
// session than the first's, and the sequence's own.
func (r *Reader) Next() (snap sessnap.Snapshot, more bool, err error) {
	snap, err, more = r.next()
	switch {
	case !more:
		return sessnap.Snapshot{}, false, nil
	case err != nil:
		return sessnap.Snapshot{}, false, err
	case snap.ID != r.id:
		return sessnap.Snapshot{}, false, fmt.Errorf("%w: snapshot of session %q in the history of %s", sessionstore.ErrInvalidSnapshot, snap.ID, r.id)
	}
	return snap, true, nil
}

// Stop ends the pull: the sequence's iteration is stopped.
func (r *Reader) Stop() { r.stop() }
