package jsonlstore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
)

// Delta records (FORMAT.md, internal/record/delta.go). A revision that
// changes part of the snapshot is written as a delta against the previous
// revision's snapshot; a chain is a full record and the deltas after it.
// The writer starts a new chain with a full record whenever the chain's
// bytes (the full record's payload and the lines of its deltas, the new
// one included) would exceed one and a half times the new snapshot, when
// the deltas' lines would exceed the record cap, or after maxChainDeltas
// deltas (record.Chain). So loading the latest revision reads at most about one and a
// half snapshots, whatever the length of the history; readers refuse (as
// corruption) a chain whose deltas exceed the record cap, so a hostile log
// cannot make them hold more than about three times the cap.

// maxChainDeltas bounds the deltas a writer writes after a full record.
const maxChainDeltas = record.MaxChainDeltas

// chainState is what a writer knows of its session's latest chain: the
// chain policy, shared with other adapters of the format.
type chainState = record.Chain

// chainOf returns the chain that ends at last, a delta record of v: the
// full record it starts at and the deltas after it, in order, read
// backwards from last. Its cost is the chain's bytes, bounded by the
// writer's policy, not the history. A chain that does not reach a full
// record through valid, consecutive records is corruption.
func (s *Store) chainOf(id session.SessionID, v *view, last *rawRecord) (*rawRecord, []*rawRecord, error) {
	deltas := []*rawRecord{last}
	held := int(last.LineLen)
	bs := &v.back
	cur := last
	for {
		if cur.Offset == 0 {
			return nil, nil, s.newAnomaly(v, id, cur.Offset, cur.Rev, nil,
				fmt.Errorf("revision %d is a delta and the log holds no revision before it (its base is missing)", cur.Rev))
		}
		prev, err := bs.prevNL(cur.Offset - 1)
		if err != nil {
			return nil, nil, err
		}
		start := prev + 1
		n := cur.Offset - 1 - start
		if n > int64(v.maxLine) {
			return nil, nil, s.newAnomaly(v, id, start, cur.Rev-1, nil,
				fmt.Errorf("base of the delta of revision %d: %w", cur.Rev, errTooLong))
		}
		line, err := bs.readAt(start, n)
		if err != nil {
			return nil, nil, err
		}
		r, err := parseLine(line, v.maxPayload)
		if err != nil {
			return nil, nil, s.newAnomaly(v, id, start, cur.Rev-1, line,
				fmt.Errorf("base of the delta of revision %d is damaged: %w", cur.Rev, err))
		}
		r.Offset, r.LineLen = start, n+1
		if r.Rev != cur.Rev-1 {
			return nil, nil, s.newAnomaly(v, id, cur.Offset, cur.Rev, nil,
				fmt.Errorf("revision %d is a delta but revision %d precedes it (its base is missing)", cur.Rev, r.Rev))
		}
		switch r.Kind {
		case KindFull:
			slices.Reverse(deltas)
			return &r, deltas, nil
		case KindDelta:
		default:
			return nil, nil, unknownKind(id, &r)
		}
		if held += int(r.LineLen); held > v.maxLine {
			return nil, nil, s.newAnomaly(v, id, r.Offset, r.Rev, nil,
				fmt.Errorf("the delta chain of revision %d holds more than the record cap (%d bytes)", last.Rev, v.maxPayload))
		}
		deltas = append(deltas, &r)
		cur = &r
	}
}

// snapshotOf returns the snapshot of r, a record of v: its payload when it
// is a full record, else its chain rebuilt.
func (s *Store) snapshotOf(id session.SessionID, v *view, r *rawRecord) ([]byte, error) {
	switch r.Kind {
	case KindFull:
		return r.Payload, nil
	case KindDelta:
	default:
		return nil, unknownKind(id, r)
	}
	full, deltas, err := s.chainOf(id, v, r)
	if err != nil {
		return nil, err
	}
	snap, bad, err := rebuild(full.Payload, deltas, v.maxPayload)
	if err != nil {
		return nil, s.newAnomaly(v, id, bad.Offset, bad.Rev, nil, err)
	}
	return snap, nil
}

// rebuild applies deltas to base. On failure it names the first delta that
// does not apply.
func rebuild(base []byte, deltas []*rawRecord, maxOut int) ([]byte, *rawRecord, error) {
	payloads := make([][]byte, len(deltas))
	for i, d := range deltas {
		payloads[i] = d.Payload
	}
	out, err := record.ApplyChain(base, payloads, maxOut)
	if err == nil {
		return out, nil, nil
	}
	// Find the culprit, one delta at a time (each step's checksum checked).
	cur := base
	for _, d := range deltas {
		if cur, err = record.Apply(cur, d.Payload, maxOut); err != nil {
			return nil, d, fmt.Errorf("delta does not rebuild revision %d: %w", d.Rev, err)
		}
	}
	last := deltas[len(deltas)-1]
	return nil, last, fmt.Errorf("delta chain does not rebuild revision %d: %w", last.Rev, err)
}

// unknownKind is the error for a record of a kind this program cannot
// read (a newer writer's).
func unknownKind(id session.SessionID, r *rawRecord) error {
	return fmt.Errorf("%w: session %s revision %d has record kind %q",
		sessionstore.ErrSchemaTooNew, id, r.Rev, r.Kind)
}

// snapshots rebuilds the snapshot of each record of a forward scan, one
// record after the other.
type snapshots struct {
	id   session.SessionID
	max  int
	prev []byte // the snapshot of revision rev; nil when unknown
	rev  uint64
}

// next returns the snapshot of r, the record after the previous call's
// (its bytes are valid until the next call). A delta that does not apply
// to the previous snapshot is a *sessionstore.CorruptionError at r, in
// file.
func (m *snapshots) next(r *rawRecord, file string) ([]byte, error) {
	defer func() { m.rev = r.Rev }()
	switch r.Kind {
	case KindFull:
		m.prev = append(m.prev[:0:0], r.Payload...)
		return m.prev, nil
	case KindDelta:
	default:
		m.prev = nil
		return nil, unknownKind(m.id, r)
	}
	corrupt := func(err error) error {
		m.prev = nil
		return &sessionstore.CorruptionError{ID: m.id, Path: file, Offset: r.Offset, Revision: r.Rev, Err: err}
	}
	switch {
	case r.Rev == 1:
		return nil, corrupt(errors.New("revision 1 is a delta (it has no base; it must be a full record)"))
	case m.prev == nil || m.rev+1 != r.Rev:
		return nil, corrupt(fmt.Errorf("revision %d is a delta and its base, revision %d, is missing or unreadable", r.Rev, r.Rev-1))
	}
	out, err := record.Apply(m.prev, r.Payload, m.max)
	if err != nil {
		return nil, corrupt(fmt.Errorf("delta does not rebuild revision %d: %w", r.Rev, err))
	}
	m.prev = out
	return out, nil
}

// chainAcc collects, in a forward scan, the chain of the latest record
// seen, so that the snapshot of any one revision is rebuilt at once
// (LoadRevision) rather than one delta at a time.
type chainAcc struct {
	max    int
	full   *rawRecord // nil when the chain is broken
	deltas []*rawRecord
	held   int
	rev    uint64
	why    error  // why the chain is broken
	buf    []byte // the full record's payload
}

// add takes r (copying its payload).
func (a *chainAcc) add(r *rawRecord) {
	defer func() { a.rev = r.Rev }()
	switch r.Kind {
	case KindFull:
		// Reuse the buffer: a forward scan meets many full records and
		// keeps one.
		a.buf = append(a.buf[:0], r.Payload...)
		full := *r
		full.Payload = a.buf
		a.full, a.deltas, a.held, a.why = &full, a.deltas[:0], 0, nil
		return
	case KindDelta:
	default:
		a.full, a.why = nil, fmt.Errorf("revision %d has record kind %q", r.Rev, r.Kind)
		return
	}
	switch {
	case a.full == nil && a.why == nil, a.full != nil && a.rev+1 != r.Rev:
		a.full, a.why = nil, fmt.Errorf("revision %d is a delta and its base, revision %d, is missing", r.Rev, r.Rev-1)
	case a.full != nil:
		if a.held += int(r.LineLen); a.held > a.max+envelopeMax {
			a.full, a.why = nil, fmt.Errorf("the delta chain of revision %d holds more than the record cap", r.Rev)
			return
		}
		a.deltas = append(a.deltas, copyRecord(r))
	}
}

// snapshot rebuilds the snapshot of the latest record added.
func (a *chainAcc) snapshot() ([]byte, *rawRecord, error) {
	if a.full == nil {
		why := a.why
		if why == nil {
			why = errors.New("no full record precedes it")
		}
		return nil, nil, why
	}
	return rebuild(a.full.Payload, a.deltas, a.max)
}
