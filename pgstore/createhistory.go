package pgstore

import (
	"context"
	"iter"
	"maps"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

var _ sessionstore.HistoryCreator = (*Store)(nil)

// CreateHistory creates a session whose revisions are the snapshots snaps
// yields, in one transaction: the session's row with its lease held by
// the returned writer, every record as an append would write it (a delta
// where it pays, new content into the session's blobs once), one summary
// of the last revision and one change notification. The whole history
// commits at once, with one flush of the server's write-ahead log instead
// of one per revision, or not at all: an error or a lost connection
// before the commit leaves no session. The records go to the server as
// they are built, so the history need not fit in memory.
//
// It returns the writer at the last revision. Errors: Create's,
// ErrInvalidSnapshot for an empty sequence or a snapshot of another
// session, and the sequence's own; on any of them nothing is created.
func (s *Store) CreateHistory(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	h := sessionstore.PullHistory(snaps)
	defer h.Stop()
	snap, err := h.First()
	if err != nil {
		return nil, err
	}
	id := snap.ID
	if err := s.readyID(ctx, id); err != nil {
		return nil, err
	}
	w := s.newWriter(id, 1)
	w.app = s.newAppender(s.opts.MaxRecordBytes)
	if opts.Redactor != nil {
		w.app.Redact = redact.NewStream(opts.Redactor)
	}
	var m record.Meta
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := s.insertSessionTx(ctx, tx, w, opts.Label)
		if err != nil {
			return err
		}
		held := map[string]int64{}
		var logBytes int64
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			// A part that arrives as a reference names content an earlier
			// revision of this history stored (the first's: none).
			if err := w.arrivals.Check(id, snap.Messages, blob.Held(held).Size); err != nil {
				return err
			}
			put, added := blobPut(ctx, tx, id, held)
			next := record.First(1, s.opts.Now())
			if m.Rev > 0 {
				if next, err = record.Next(id, m, m.Rev, 1, s.opts.Now()); err != nil {
					return err
				}
			}
			var line []byte
			m, line, err = s.encode(w.app, id, next, &snap, put)
			if err != nil {
				return err
			}
			if err := insertRecord(ctx, tx, id, m, line); err != nil {
				return err
			}
			maps.Copy(held, added)
			logBytes += int64(len(line))

			last := snap
			var more bool
			if snap, more, err = h.Next(); err != nil {
				return err
			}
			if !more {
				sum := summary.Project(&last, m.Rev, m.Gen, m.Time)
				sum.Sizes.LogBytes = logBytes
				w.known, w.sound = held, maps.Clone(held)
				if err := putSummary(ctx, tx, &sum, m.Schema); err != nil {
					return err
				}
				// The lease lives its time from the end of the history,
				// not from the insert (store.go's create says why).
				_, err = tx.Exec(ctx, extendSQL, string(id), s.opts.LeaseTTL.Microseconds())
				return err
			}
		}
	})
	if err != nil {
		return nil, wrapErr("create", id, err)
	}
	w.rev.Store(m.Rev)
	s.startWriter(w, opts)
	return w, nil
}
