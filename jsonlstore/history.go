package jsonlstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
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
	return func(yield func(sessionstore.Record, error) bool) {
		var yielded uint64 // revisions already yielded survive a retry
		stopped := false
		err := s.read(ctx, id, func(v *logfile.View) error {
			h := logfile.NewRebuild(ctx, s.fs, id, v)
			defer h.Close()
			for h.Next() {
				r := h.Record()
				if r.Through() <= yielded {
					continue
				}
				var ok bool
				if r.Kind == record.KindGap {
					yielded = r.Through()
					ok = yield(sessionstore.Record{}, logfile.GapError(id, r))
				} else {
					rec, err := logfile.DecodeRecord(id, r, h.Snapshot(), h.Blobs())
					if err != nil {
						return err // (not yielded: a retry meets it again)
					}
					yielded = r.Through()
					ok = yield(rec, nil)
				}
				if !ok {
					stopped = true
					return nil
				}
			}
			return h.Err()
		})
		if err != nil && !stopped {
			yield(sessionstore.Record{}, err)
		}
	}
}
