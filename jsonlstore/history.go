package jsonlstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// historyRebuild reads session id's whole history forwards (historyScan)
// and rebuilds every revision's snapshot on the way: a delta needs its
// base, so every record is applied, also those a caller passes over. It
// stops when ctx is done. Close it when done.
type historyRebuild struct {
	*logfile.Scan
	ctx   context.Context
	snaps *record.Snapshots
	blobs *blobfile.Cache // the session's content kept out of line, read once
	err   error
}

// rebuildHistory starts a historyRebuild of session id as v sees the log.
func (s *Store) rebuildHistory(ctx context.Context, id session.SessionID, v *logfile.View) *historyRebuild {
	return &historyRebuild{Scan: logfile.NewScan(s.fs, id, v), ctx: ctx,
		snaps: record.NewSnapshots(id, v.MaxPayload), blobs: blobfile.NewCache(s.fs, id)}
}

// Next advances to the next record and applies it to the snapshot.
func (h *historyRebuild) Next() bool {
	if h.err != nil || !h.Scan.Next() {
		return false
	}
	if h.err = h.ctx.Err(); h.err != nil {
		return false
	}
	h.err = h.snaps.Add(h.Record())
	return h.err == nil
}

// Snapshot returns the bytes of the current record's revision's snapshot
// (valid until Next).
func (h *historyRebuild) Snapshot() []byte { return h.snaps.Bytes() }

// Err returns what stopped the read: nil at the log's end.
func (h *historyRebuild) Err() error {
	if h.err != nil {
		return h.err
	}
	return h.Scan.Err()
}

// Close closes the open segment and the content cache.
func (h *historyRebuild) Close() {
	h.blobs.Close()
	h.Scan.Close()
}

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
			h := s.rebuildHistory(ctx, id, v)
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
					rec, err := decodeRecord(id, r, h.Snapshot(), h.blobs)
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
