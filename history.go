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
	var w Writer
	for snap, err := range snaps {
		if err == nil && w != nil && snap.ID != w.ID() {
			err = fmt.Errorf("%w: snapshot of session %q in the history of %s", ErrInvalidSnapshot, snap.ID, w.ID())
		}
		if err == nil && w == nil {
			w, err = s.Create(ctx, snap, opts)
			if err != nil {
				return nil, err
			}
			continue
		}
		if err == nil {
			_, err = w.Append(ctx, w.Revision(), snap)
		}
		if err != nil {
			if w != nil {
				// The writer still holds the lease: the partial session goes.
				// Deleting may fail too (the failure that stopped the history
				// may be the store's); the caller learns of both.
				if derr := w.Delete(context.WithoutCancel(ctx)); derr != nil {
					err = errors.Join(err, fmt.Errorf("sessionstore: remove the partial history of %s: %w", w.ID(), derr))
				}
			}
			return nil, err
		}
	}
	if w == nil {
		return nil, fmt.Errorf("%w: an empty history", ErrInvalidSnapshot)
	}
	return w, nil
}

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
