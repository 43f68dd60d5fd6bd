package record

import (
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// What the bytes after a log's last valid record are (FORMAT.md,
// "Uncommitted tail" and "Corruption"):
//
//   - nothing: the log is clean;
//   - an uncommitted tail: what a single torn append leaves — a partial
//     line, NULs where pages were lost, or one newline-terminated line
//     that fails its checks and claims (if its envelope is legible) the
//     next revision. It was never acknowledged: the next holder copies it
//     aside and cuts it;
//   - corruption: anything else — a damaged line that claims another
//     revision, more than one damaged line, more bytes than one append
//     (Back.Last refuses those), or a log whose last valid record is below
//     a revision that other evidence (a summary written for this very
//     log file) says was committed, or whose last record repeats the one
//     that evidence places earlier.
//     Nothing is removed.

// Evidence is what a source other than the log says was committed to it:
// a summary written for this very log file (same identity, valid
// checksum) names a committed record's revision and offset.
type Evidence struct {
	Revision uint64
	Offset   int64
	Source   string // the file the evidence is from, for messages
}

// ClassifyTail returns nil when t, the bytes after last (the log's last
// valid record, nil for none), is an uncommitted tail that may be cut, or
// the *sessionstore.CorruptionError it is evidence of. ev is the
// evidence of committed revisions (zero for none); at reads the line at
// an offset of the log (for checking ev against it; nil: not checked).
func ClassifyTail(id session.SessionID, path string, last *Rec, t Tail, ev Evidence, at func(off int64) (*Rec, error)) error {
	corrupt := func(off int64, rev uint64, err error) error {
		return &sessionstore.CorruptionError{ID: id, Path: path, Offset: off, Revision: rev, Err: err}
	}
	if last == nil {
		why := errors.New("log holds no valid record")
		if errors.Is(t.FirstErr, ErrCRLF) {
			why = CRLFError(path)
		}
		return corrupt(0, 0, why)
	}
	if ev.Revision > last.Through() {
		return corrupt(t.Start, last.Through()+1, fmt.Errorf(
			"revision %d was committed (%s) but the log's last valid record is %d; the log lost records", ev.Revision, ev.Source, last.Through()))
	}
	if ev.Revision > 0 && at != nil && ev.Revision == last.Rev && ev.Offset != last.Offset {
		// The offset of a record in a log file never changes: a second
		// copy of the evidenced record, last, is a duplicated piece of the
		// log. (Evidence naming something else at its offset is about
		// another file that had this one's identity, and proves nothing.)
		if r, err := at(ev.Offset); err == nil && r.Rev == ev.Revision {
			return corrupt(last.Offset, last.Rev, fmt.Errorf(
				"revision %d is at offset %d (%s) and again, last, at offset %d: the end of the log repeats earlier records", last.Rev, ev.Offset, ev.Source, last.Offset))
		}
	}
	if t.Bytes == 0 {
		return nil
	}
	if t.Lines > 1 {
		return corrupt(t.Start, last.Through()+1, fmt.Errorf(
			"%d damaged lines after the last valid record (a torn append leaves at most one)", t.Lines))
	}
	if t.Lines == 1 && t.Claimed && t.ClaimedRev != last.Through()+1 {
		return corrupt(t.Start, t.ClaimedRev, fmt.Errorf(
			"damaged line claims revision %d after revision %d", t.ClaimedRev, last.Through()))
	}
	return nil
}

// CRLFError explains a log whose lines end with CRLF: it was converted by a
// text tool, and converting it back restores every record.
func CRLFError(path string) error {
	return fmt.Errorf("%w: the log was converted by a text tool; convert it back with `sed -i 's/\\r$//' %s` (or dos2unix), then verify again", ErrCRLF, path)
}
