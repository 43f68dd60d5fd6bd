package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// HistoryCreator is a Store that creates a session with a whole history
// at once. CreateHistory uses it when the store has it.
type HistoryCreator interface {
	Store
	// CreateHistory creates a session whose revisions 1, 2, … are the
	// snapshots snaps yields, in order, and returns the writer that holds
	// its lease, at the last revision. The first snapshot names the
	// session; every other must be of the same session (each is checked as
	// Append checks one). The whole history is made durable at once, not
	// revision by revision: when CreateHistory returns nil every revision
	// is durable, and a crash or an error before that leaves no session,
	// never part of one. Errors: Create's, ErrInvalidSnapshot for an empty
	// sequence or a snapshot of another session, ErrTooLarge, and the
	// sequence's own; on any of them nothing is created. The sequence is
	// read once, as the revisions are written: it may be longer than
	// memory holds.
	CreateHistory(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts AcquireOptions) (Writer, error)
}

// CreateHistory creates a session from its whole history in s: with s's
// own CreateHistory when s is a HistoryCreator, else with Create and one
// Append per further revision, each durable in turn. On an error part
// way the fallback deletes what it created (a crash part way can leave
// the revisions written so far: a caller that imports should be able to
// continue such a session, as importer.Transcript.Apply does). Errors as
// HistoryCreator's.
func CreateHistory(ctx context.Context, s Store, snaps iter.Seq2[sessnap.Snapshot, error], opts AcquireOptions) (Writer, error) {
	if hc, ok := s.(HistoryCreator); ok {
		return hc.CreateHistory(ctx, snaps, opts)
	}
	h := PullHistory(snaps)
	defer h.Stop()
	first, err := h.First()
	if err != nil {
		return nil, err
	}
	w, err := s.Create(ctx, first, opts)
	if err != nil {
		return nil, err
	}
	for {
		snap, more, err := h.Next()
		if err == nil && !more {
			return w, nil
		}
		if err == nil {
			_, err = w.Append(ctx, w.Revision(), snap)
		}
		if err != nil {
			// The writer still holds the lease: the partial session goes.
			// Deleting may fail too (the failure that stopped the history
			// may be the store's); the caller learns of both.
			if derr := w.Delete(context.WithoutCancel(ctx)); derr != nil {
				err = errors.Join(err, fmt.Errorf("sessionstore: remove the partial history of %s: %w", w.ID(), derr))
			}
			return nil, err
		}
	}
}

// HistoryReader pulls the snapshots of a history one at a time, as
// CreateHistory takes them, holding them to HistoryCreator's rules: a
// history has a first snapshot, which names the session; every other
// snapshot is of the same session; the sequence's own error ends it. It
// is how adapters read the history their CreateHistory is given:
//
//	h := sessionstore.PullHistory(snaps)
//	defer h.Stop()
//	first, err := h.First()
//	… create session first.ID at revision 1 …
//	for {
//		snap, more, err := h.Next()
//		… on an error nothing is created; without more, publish …
//	}
type HistoryReader struct {
	next func() (sessnap.Snapshot, error, bool)
	stop func()
	id   session.SessionID // the first snapshot's
}

// PullHistory returns a HistoryReader of the history snaps yields. Its
// Stop must be called, as iter.Pull2's.
func PullHistory(snaps iter.Seq2[sessnap.Snapshot, error]) *HistoryReader {
	next, stop := iter.Pull2(snaps)
	return &HistoryReader{next: next, stop: stop}
}

// First returns the first snapshot, which names the session. Errors:
// ErrInvalidSnapshot for an empty history, and the sequence's own.
func (r *HistoryReader) First() (sessnap.Snapshot, error) {
	snap, err, ok := r.next()
	switch {
	case !ok:
		return sessnap.Snapshot{}, fmt.Errorf("%w: an empty history", ErrInvalidSnapshot)
	case err != nil:
		return sessnap.Snapshot{}, err
	}
	r.id = snap.ID
	return snap, nil
}

// Next returns the snapshot after the last one returned, and false at the
// end of the history. Errors: ErrInvalidSnapshot for a snapshot of
// another session than the first's, and the sequence's own.
func (r *HistoryReader) Next() (snap sessnap.Snapshot, more bool, err error) {
	snap, err, more = r.next()
	switch {
	case !more:
		return sessnap.Snapshot{}, false, nil
	case err != nil:
		return sessnap.Snapshot{}, false, err
	case snap.ID != r.id:
		return sessnap.Snapshot{}, false, fmt.Errorf("%w: snapshot of session %q in the history of %s", ErrInvalidSnapshot, snap.ID, r.id)
	}
	return snap, true, nil
}

// Stop ends the pull: the sequence's iteration is stopped.
func (r *HistoryReader) Stop() { r.stop() }

// Snapshots returns the sequence of the snapshots of sessions as seq
// yields them, for CreateHistory: each session captured with sessnap.Of
// as it is yielded, so a sequence that changes one session in place
// (importer.Transcript.Revisions) gives one snapshot per step.
func Snapshots(seq iter.Seq2[*session.Session, error]) iter.Seq2[sessnap.Snapshot, error] {
	return func(yield func(sessnap.Snapshot, error) bool) {
		for s, err := range seq {
			var snap sessnap.Snapshot
			if err == nil {
				snap, err = sessnap.Of(s)
			}
			if !yield(snap, err) || err != nil {
				return
			}
		}
	}
}
