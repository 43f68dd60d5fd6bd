package sessionstore

import (
	"context"
	"iter"
	"time"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// RecordInfo describes one stored record of a session without its
// payload: what `sessions log` prints.
type RecordInfo struct {
	Revision   uint64    `json:"revision"`
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
	// Schema is the sessnap schema version of the writer.
	Schema int `json:"schema"`
	// Kind is the record kind ("full", or "delta" for a record that stores
	// what changed since the previous revision); empty when the store does
	// not say.
	Kind string `json:"kind"`
	// File is where the record is, relative to the store root (or the
	// table of a database store), and Offset its byte offset there. For an
	// archived record (Archived: a revision compaction trimmed from the
	// log) File is its archive segment and Offset is in the segment's
	// uncompressed bytes.
	File     string `json:"file"`
	Offset   int64  `json:"offset"`
	Archived bool   `json:"archived,omitempty"`
	// Bytes is the size of the record as stored (a log line, newline
	// included), and PayloadBytes the size of its payload (the snapshot,
	// or for a delta record the delta).
	Bytes        int64 `json:"bytes"`
	PayloadBytes int   `json:"payload_bytes"`
}

// RecordLister is a Store that can list a session's records as stored,
// without decoding their payloads. Records uses it when the store has it.
type RecordLister interface {
	Store
	// Records yields the metadata of every record of session id in
	// revision order, with the checks History makes; a check that fails
	// ends the sequence with its error (a *CorruptionError), yielded once,
	// last. It takes no lease and modifies nothing.
	Records(ctx context.Context, id session.SessionID) iter.Seq2[RecordInfo, error]
}

// Records yields the records of session id in s: from s's own Records
// when s is a RecordLister, else from its History, each record's Bytes
// and PayloadBytes being the size of its encoded snapshot.
func Records(ctx context.Context, s Store, id session.SessionID) iter.Seq2[RecordInfo, error] {
	if l, ok := s.(RecordLister); ok {
		return l.Records(ctx, id)
	}
	return func(yield func(RecordInfo, error) bool) {
		for rec, err := range s.History(ctx, id) {
			if err != nil {
				yield(RecordInfo{}, err)
				return
			}
			b, err := sessnap.Marshal(rec.Snapshot)
			if err != nil {
				yield(RecordInfo{}, err)
				return
			}
			info := RecordInfo{Revision: rec.Revision, Generation: rec.Generation, Time: rec.Time,
				Schema: rec.SchemaVersion, Bytes: int64(len(b)), PayloadBytes: len(b)}
			if !yield(info, nil) {
				return
			}
		}
	}
}
