package logfile

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// History yields every revision of session id in order, archived ones
// first, read on fresh views (Read) and decoded, each once even when the
// read is retried: a gap as a *sessionstore.GapError in its place, a
// damaged record as the error that ends it (jsonlstore.Store.History
// says which).
func History(ctx context.Context, root *layout.Root, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	return func(yield func(sessionstore.Record, error) bool) {
		var yielded uint64 // revisions already yielded survive a retry
		stopped := false
		err := Read(ctx, root, id, func(v *View) error {
			h := NewRebuild(ctx, root.FS, id, v)
			defer h.Close()
			for h.Next() {
				r := h.Record()
				if r.Through() <= yielded {
					continue
				}
				var ok bool
				if r.Kind == record.KindGap {
					yielded = r.Through()
					ok = yield(sessionstore.Record{}, GapError(id, r))
				} else {
					rec, err := DecodeRecord(id, r, h.Snapshot(), h.Blobs())
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

// Placed is a record of a session's history and where it is kept.
type Placed struct {
	Rec      *record.Rec // payload valid until the next one
	Archived bool
}

// Info is the record's metadata, as Store.Records yields it.
func (p Placed) Info() sessionstore.RecordInfo {
	r := p.Rec
	return sessionstore.RecordInfo{
		Revision: r.Rev, Generation: r.Gen, Time: r.Time, Schema: r.Schema, Kind: r.Kind,
		File: r.Path, Offset: r.Offset, Archived: p.Archived, Bytes: r.LineLen, PayloadBytes: len(r.Payload),
	}
}

// Records yields every verified record of session id's history, as
// History reads it but without rebuilding snapshots, each once even when
// the read is retried.
func Records(ctx context.Context, root *layout.Root, id session.SessionID) iter.Seq2[Placed, error] {
	return func(yield func(Placed, error) bool) {
		var yielded uint64 // records already yielded survive a retry of the read
		stopped := false
		err := Read(ctx, root, id, func(v *View) error {
			h := NewScan(root.FS, id, v)
			defer h.Close()
			for h.Next() {
				if err := ctx.Err(); err != nil {
					return err
				}
				r := h.Record()
				if r.Through() <= yielded {
					continue
				}
				yielded = r.Through()
				if !yield(Placed{Rec: r, Archived: h.Archived()}, nil) {
					stopped = true
					return nil
				}
			}
			return h.Err()
		})
		if err != nil && !stopped {
			yield(Placed{}, err)
		}
	}
}

// Each yields f of every record seq yields (Records), and stops at the
// first error, which it yields.
func Each[T any](seq iter.Seq2[Placed, error], f func(Placed) T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for p, err := range seq {
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			if !yield(f(p), nil) {
				return
			}
		}
	}
}
