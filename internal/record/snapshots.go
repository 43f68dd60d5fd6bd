package record

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Snapshots rebuilds the snapshot of each record of a forward read, one
// record after another. It keeps the latest snapshot as the pieces the
// records gave it (a full record's members, the values and array elements
// the deltas since set or appended), so taking a delta costs what the
// delta changes: its length and checksum are checked against the pieces
// (checksums combined, nothing written out), and Bytes writes the
// snapshot only when a caller wants it.
//
//	var snaps record.Snapshots // (or NewSnapshots)
//	for rd.Next() {
//		if err := snaps.Add(rd.Record()); err != nil { … }
//		snap := snaps.Bytes() // when the revision's snapshot is wanted
//	}
type Snapshots struct {
	id  session.SessionID
	max int
	d   *doc // nil: the current snapshot is unknown (a gap, a damaged base)
	why error
	// held counts the bytes of the chain's deltas: a writer keeps them
	// within the record cap, so more is damage and is refused before it
	// costs more.
	held int
	rev  uint64
	full []byte // the current chain's full payload, as the doc's pieces point into it
	// atFull is true while the latest record is the full record itself.
	atFull bool
}

// NewSnapshots returns a Snapshots for session id whose snapshots are at
// most maxPayload bytes.
func NewSnapshots(id session.SessionID, maxPayload int) *Snapshots {
	return &Snapshots{id: id, max: maxPayload}
}

// Lose makes the current snapshot unknown because of err (damage a
// salvaging reader skipped): a delta after it reports err as the reason
// its base is unreadable.
func (s *Snapshots) Lose(err error) { s.d, s.why, s.atFull = nil, err, false }

// Known reports whether the latest record's snapshot is known.
func (s *Snapshots) Known() bool { return s.d != nil }

// Add takes the next record, which follows the previous one (a Reader
// checked the sequence). A delta that does not apply to the previous
// snapshot, or rebuilds other bytes than its length and checksum say, is a
// *sessionstore.CorruptionError at the delta (after which the snapshot is
// unknown until the next full record). The record's payload is copied.
func (s *Snapshots) Add(r *Rec) error {
	defer func() { s.rev, s.atFull = r.Through(), r.Kind == KindFull }()
	switch r.Kind {
	case KindFull:
		// Its pieces are found when a delta needs them: a log of full
		// records costs a copy per record, not a parse.
		s.full = append(s.full[:0:0], r.Payload...)
		s.held, s.d, s.why = 0, nil, nil
		return nil
	case KindGap:
		s.d, s.why = nil, fmt.Errorf("revisions %d to %d are missing", r.Rev, r.Through())
		return nil
	case KindDelta:
	default:
		s.d, s.why = nil, fmt.Errorf("revision %d has record kind %q", r.Rev, r.Kind)
		return nil
	}
	corrupt := func(err error) error {
		s.d, s.why = nil, fmt.Errorf("revision %d did not rebuild", r.Rev)
		return &sessionstore.CorruptionError{ID: s.id, Path: r.Path, Offset: r.Offset, Revision: r.Rev, Err: err}
	}
	if s.d == nil && s.why == nil && s.atFullBefore(r) {
		d, err := newDoc(s.full)
		if err != nil {
			s.why = fmt.Errorf("revision %d's snapshot is not a JSON object: %w", r.Rev-1, err)
		}
		s.d = d
		if err != nil {
			s.d = nil
		}
	}
	switch {
	case s.d == nil && s.why != nil:
		return corrupt(fmt.Errorf("revision %d is a delta and its base, revision %d, is unreadable: %w", r.Rev, r.Rev-1, s.why))
	case s.d == nil || s.rev+1 != r.Rev:
		return corrupt(fmt.Errorf("revision %d is a delta and its base, revision %d, is missing", r.Rev, r.Rev-1))
	}
	if s.held += int(r.LineLen); s.held > s.max+EnvelopeMax {
		return corrupt(fmt.Errorf("the delta chain of revision %d holds more than the record cap (%d bytes)", r.Rev, s.max))
	}
	payload := bytes.Clone(r.Payload) // the doc keeps pieces of it
	ops, err := parseDelta(payload)
	if err != nil {
		return corrupt(fmt.Errorf("delta does not rebuild revision %d: %w: %w", r.Rev, ErrDelta, err))
	}
	if err := s.d.apply(ops, s.max); err != nil {
		if !errors.Is(err, ErrTooLong) {
			err = fmt.Errorf("%w: %w", ErrDelta, err)
		}
		return corrupt(fmt.Errorf("delta does not rebuild revision %d: %w", r.Rev, err))
	}
	if sum := s.d.checksum(); sum != ops.snapCRC {
		return corrupt(fmt.Errorf("delta does not rebuild revision %d: %w: result checksum %08x, the delta says %08x", r.Rev, ErrDelta, sum, ops.snapCRC))
	}
	return nil
}

// atFullBefore reports whether the record before r was the full record
// whose payload s.full holds.
func (s *Snapshots) atFullBefore(r *Rec) bool { return s.atFull && s.rev+1 == r.Rev }

// Bytes returns the latest record's snapshot, written out (a new slice), or
// nil when it is unknown. A full record's is its payload, verbatim.
func (s *Snapshots) Bytes() []byte {
	if s.atFull {
		return bytes.Clone(s.full)
	}
	if s.d == nil {
		return nil
	}
	return s.d.appendTo(make([]byte, 0, s.d.size()))
}

// AppendBytes appends the latest record's snapshot to b, as Bytes
// returns it (b unchanged when it is unknown): a reader that keeps a
// buffer or two saves Bytes' allocation of each revision.
func (s *Snapshots) AppendBytes(b []byte) []byte {
	if s.atFull {
		return append(b, s.full...)
	}
	if s.d == nil {
		return b
	}
	return s.d.appendTo(b)
}

// Why says why the latest snapshot is unknown.
func (s *Snapshots) Why() error { return s.why }
