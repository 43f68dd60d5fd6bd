package jsonlstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// Records yields the metadata of every record of session id in order,
// archived revisions first, as History yields records, and with the same
// checks (framing, checksum, sequence; a damaged record followed by valid
// ones ends the sequence with a *sessionstore.CorruptionError, yielded
// once, last), but without decoding payloads: its cost is reading the log
// (and archives), not decoding every snapshot. Like every read it takes no
// lease and modifies nothing.
func (s *Store) Records(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.RecordInfo, error] {
	return func(yield func(sessionstore.RecordInfo, error) bool) {
		for r, err := range s.rawRecords(ctx, id) {
			if err != nil {
				yield(sessionstore.RecordInfo{}, err)
				return
			}
			if !yield(r.info(), nil) {
				return
			}
		}
	}
}

// RecordLines yields every record line of session id in order, archived
// revisions first, each with its newline, exactly as stored (a copy the
// caller may keep), with the checks of Records. It is how a session is
// copied verbatim into another store of the same record format.
func (s *Store) RecordLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for r, err := range s.rawRecords(ctx, id) {
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(r.rec.Line(), nil) {
				return
			}
		}
	}
}

// placedRecord is a record of a session's history and where it is kept.
type placedRecord struct {
	rec      *record.Rec // payload valid until the next one
	archived bool
}

func (p placedRecord) info() sessionstore.RecordInfo {
	r := p.rec
	return sessionstore.RecordInfo{
		Revision: r.Rev, Generation: r.Gen, Time: r.Time, Schema: r.Schema, Kind: r.Kind,
		File: r.Path, Offset: r.Offset, Archived: p.archived, Bytes: r.LineLen, PayloadBytes: len(r.Payload),
	}
}

// rawRecords yields every verified record of session id's history, as
// History reads it but without rebuilding snapshots, each once even when
// the read is retried.
func (s *Store) rawRecords(ctx context.Context, id session.SessionID) iter.Seq2[placedRecord, error] {
	return func(yield func(placedRecord, error) bool) {
		var yielded uint64 // records already yielded survive a retry of the read
		stopped := false
		err := s.read(ctx, id, func(v *logfile.View) error {
			h := logfile.NewScan(s.fs, id, v)
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
				if !yield(placedRecord{rec: r, archived: h.Archived()}, nil) {
					stopped = true
					return nil
				}
			}
			return h.Err()
		})
		if err != nil && !stopped {
			yield(placedRecord{}, err)
		}
	}
}
