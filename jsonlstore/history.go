package jsonlstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// History yields every revision in order, archived ones first. It stops
// at the first corruption, yielding a *sessionstore.CorruptionError with
// its file and offset, and before a newer program's record (a
// *sessionstore.NewerRecordError); an uncommitted tail is not part of the
// history. Revisions a repair set aside are yielded as one
// *sessionstore.GapError in their place, and the history goes on after
// them.
func (s *Store) History(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	return checked(s, ctx, id, func() iter.Seq2[sessionstore.Record, error] { return logfile.History(ctx, s.root, id) })
}

// checked yields what seq() yields once the store is open, ctx is not
// done and id is valid (check), or the error that says why not.
func checked[T any](s *Store, ctx context.Context, id session.SessionID, seq func() iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		if err := s.check(ctx, id); err != nil {
			var zero T
			yield(zero, err)
			return
		}
		for v, err := range seq() {
			if !yield(v, err) {
				return
			}
		}
	}
}
