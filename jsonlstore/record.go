package jsonlstore

import (
	"errors"

	"github.com/sessionstore/sessionstore/internal/record"
)

// Records are lines of log.jsonl in the format of package internal/record
// (FORMAT.md): a positional envelope, the snapshot verbatim, a CRC-32C.
// These are jsonlstore's names for that codec.

// RecordVersion is the newest record format version ("v") the store
// reads. It writes full records as format 1 and deltas as format 2
// (record.VersionOf).
const RecordVersion = record.Version

// Record kinds.
const (
	// KindFull records hold a whole snapshot.
	KindFull = record.KindFull
	// KindDelta records hold a delta against the previous revision's
	// snapshot (delta.go).
	KindDelta = record.KindDelta
)

// envelopeMax bounds the envelope bytes around a payload.
const envelopeMax = record.EnvelopeMax

// meta is a record's envelope.
type meta = record.Meta

// rawRecord is a parsed, checksum-verified line.
type rawRecord struct {
	meta
	Offset  int64  // of the line in the log
	LineLen int64  // including the newline
	Payload []byte // aliases the line buffer unless copied
}

// End is the offset just past the record's newline.
func (r *rawRecord) End() int64 { return r.Offset + r.LineLen }

// encodeRecord returns the line (with its newline) for m and payload.
func encodeRecord(m meta, payload []byte) []byte { return record.Encode(m, payload) }

// Parse errors: what check a line failed. They are wrapped in a
// sessionstore.CorruptionError by readers.
var (
	errNoNewline = errors.New("record has no terminating newline")
	errFraming   = record.ErrFraming
	errTooLong   = record.ErrTooLong
)

// parseLine parses one line (without its newline) and verifies its
// checksum. maxPayload bounds the payload length it accepts. The returned
// payload aliases line.
func parseLine(line []byte, maxPayload int) (rawRecord, error) {
	m, payload, err := record.Parse(line, maxPayload)
	return rawRecord{meta: m, Payload: payload}, err
}

// peekRev extracts the revision a damaged line claims, if its envelope
// prefix is intact enough to say. It is evidence only, never trusted.
func peekRev(line []byte) (uint64, bool) { return record.PeekRev(line) }
