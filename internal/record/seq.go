package record

import (
	"errors"
	"fmt"
)

// The sequence rules of a session's records, wherever they are stored (a
// log file, its archives, a database table): this is their one statement.
//
//   - The first record is revision 1 (or, in a log whose older revisions
//     were archived, the revision after the archives' last).
//   - Each record is the revision after the previous record's last (a gap
//     record stands for several revisions).
//   - A record's generation is never lower than the previous record's,
//     and its time never earlier.
//   - A delta's base is the record before it: a delta is never the first
//     record, and never follows a gap or a record whose snapshot is
//     unknown. (Whether it applies is checked when its snapshot is built.)

// ErrSequence reports records that break the sequence rules.
var ErrSequence = errors.New("record sequence broken")

// Seq checks the sequence rules for records met in order. The zero value
// expects revision 1.
type Seq struct {
	prev     Meta
	have     bool
	anyFirst bool
}

// After returns a Seq whose next record must follow prev.
func After(prev Meta) Seq { return Seq{prev: prev, have: true} }

// Resumed returns a Seq whose first record may be any revision: a log
// read without the archives that hold its older revisions. That first
// record must still not be a delta (a log always starts with a full
// record, or a gap).
func Resumed() Seq { return Seq{anyFirst: true} }

// Prev returns the last record accepted, and false when none was.
func (q Seq) Prev() (Meta, bool) { return q.prev, q.have }

// Check reports whether m may follow the records accepted so far, without
// accepting it. The error wraps ErrSequence and says which rule broke.
func (q Seq) Check(m Meta) error {
	if !q.have {
		switch {
		case q.anyFirst && m.Kind == KindDelta:
			return fmt.Errorf("%w: the log starts with revision %d, a delta (its base is not in the log)", ErrSequence, m.Rev)
		case q.anyFirst:
		case m.Rev != 1:
			return fmt.Errorf("%w: the first record is revision %d, not 1", ErrSequence, m.Rev)
		case m.Kind == KindDelta:
			return fmt.Errorf("%w: revision 1 is a delta (it has no base; it must be a full record)", ErrSequence)
		}
		return nil
	}
	p := q.prev
	switch {
	case m.Rev <= p.Through():
		return fmt.Errorf("%w: revision %d follows revision %d (a repeated revision)", ErrSequence, m.Rev, p.Through())
	case m.Rev != p.Through()+1:
		return fmt.Errorf("%w: revision %d follows revision %d (revisions %d to %d are missing)", ErrSequence, m.Rev, p.Through(), p.Through()+1, m.Rev-1)
	case m.Gen < p.Gen:
		return fmt.Errorf("%w: revision %d has generation %d, after generation %d", ErrSequence, m.Rev, m.Gen, p.Gen)
	case m.Time.Before(p.Time):
		return fmt.Errorf("%w: revision %d has time %s, before the previous record's %s", ErrSequence, m.Rev, m.Time.Format(timeLayout), p.Time.Format(timeLayout))
	case m.Kind == KindDelta && p.Kind == KindGap:
		return fmt.Errorf("%w: revision %d is a delta after a gap (its base is missing)", ErrSequence, m.Rev)
	}
	return nil
}

// Accept checks m (as Check does) and makes it the previous record.
func (q *Seq) Accept(m Meta) error {
	if err := q.Check(m); err != nil {
		return err
	}
	q.prev, q.have = m, true
	return nil
}

const timeLayout = "2006-01-02T15:04:05.999999999Z07:00"
