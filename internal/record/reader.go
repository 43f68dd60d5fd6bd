package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Rec is a verified record at its place in a source.
type Rec struct {
	Meta
	// Path is the source holding it (a log, an archive segment, a table),
	// and Offset the byte offset of its line there (in an archive segment,
	// in the uncompressed bytes).
	Path    string
	Offset  int64
	LineLen int64 // newline included
	// Payload is the record's payload. A Reader's records alias its buffer
	// until the next call to Next; Clone detaches one.
	Payload []byte
}

// End is the offset just past the record's newline.
func (r *Rec) End() int64 { return r.Offset + r.LineLen }

// Clone returns a copy of r whose payload is its own.
func (r *Rec) Clone() *Rec {
	c := *r
	c.Payload = bytes.Clone(r.Payload)
	return &c
}

// Line returns the record's line, newline included, exactly as stored:
// the format has one layout per record, so encoding the parsed envelope
// and payload again gives the stored bytes.
func (r *Rec) Line() []byte { return Encode(r.Meta, r.Payload) }

// Tail describes the bytes after the last valid record of a log.
type Tail struct {
	Start int64 // offset of the first byte after the last valid record
	Bytes int64 // from Start to the end of the log
	// Lines is the number of complete (newline-terminated) lines in it.
	Lines int
	// First is the first complete line of the tail (nil for none, or for a
	// line too long to hold), FirstErr why it is not a record, and
	// ClaimedRev the revision its envelope claims, when Claimed.
	First      []byte
	FirstErr   error
	ClaimedRev uint64
	Claimed    bool
}

// Source is one file or stream of records for a Reader: bytes (R), or
// stored lines one at a time (NextLine).
type Source struct {
	R    io.Reader // holding exactly Size bytes; Size -1: read until EOF
	Size int64
	// NextLine, when set instead of R, returns the next stored line with
	// its newline, or io.EOF after the last.
	NextLine func() ([]byte, error)
	Path     string
	// Tail allows bytes after the last valid record (an uncommitted tail,
	// see ClassifyTail): true for a log, false for an archive segment,
	// whose every byte was verified when it was written.
	Tail bool
}

// Reader reads records forwards and checks each as FORMAT.md requires:
// framing and checksum, the sequence rules (Seq), and that a damaged line
// is followed by nothing valid — otherwise it is corruption, reported as
// a *sessionstore.CorruptionError with the file, offset and revision. It
// stops before a record from a newer program (a
// *sessionstore.NewerRecordError). Bytes after the last valid record of a
// source that allows a tail are reported by Tail, for the caller to judge
// with ClassifyTail.
//
//	rd := record.NewReader(id, maxPayload, record.Seq{})
//	rd.Read(record.Source{R: f, Size: size, Path: name, Tail: true})
//	for rd.Next() {
//		rec := rd.Record()
//		…
//	}
//	if err := rd.Err(); err != nil { … }
type Reader struct {
	// Salvage makes the reader go on past corruption, as a repair or a
	// read of one revision needs: damaged lines are skipped, and a record
	// that breaks the sequence is still returned, with Damage saying what
	// came before it. Set it before the first Next.
	Salvage bool

	id         session.SessionID
	maxPayload int
	seq        Seq
	src        Source
	sc         lines
	rec        Rec
	bad        *badLine // the first damaged line since the last record
	tail       Tail
	err        error
	recent     [recentLines]recentLine // the last records' lines, to name a repeated one
	nrecent    int
	damage     error // (Salvage) what came between the previous record and this one
	accepted   bool  // (Salvage) the current record continues the sequence
}

type badLine struct {
	off int64
	b   []byte
	err error
}

// recentLine identifies a record's line by its revision, length and
// checksum (the line's own CRC suffix).
type recentLine struct {
	rev uint64
	n   int64
	crc string
	off int64
}

const recentLines = 64

// NewReader returns a Reader of session id's records whose payloads are at
// most maxPayload bytes and whose sequence continues from seq (Seq{}: the
// first record must be revision 1).
func NewReader(id session.SessionID, maxPayload int, seq Seq) *Reader {
	return &Reader{id: id, maxPayload: maxPayload, seq: seq}
}

// Read makes src the source of the next records; the sequence continues
// from the previous source's last record (archives, then the log).
func (r *Reader) Read(src Source) {
	r.src, r.bad, r.tail = src, nil, Tail{}
	if src.NextLine != nil {
		r.sc = &lineFeed{next: src.NextLine}
		return
	}
	r.sc = newScanner(src.R, src.Size, r.maxPayload+EnvelopeMax)
}

// Seq returns the sequence state: the last record accepted.
func (r *Reader) Seq() Seq { return r.seq }

// Record returns the current record; its payload is valid until the next
// call to Next.
func (r *Reader) Record() *Rec { return &r.rec }

// Err returns what stopped the reader, nil at a clean end of the source.
func (r *Reader) Err() error { return r.err }

// Tail returns the bytes after the source's last valid record, once Next
// has returned false with Err nil.
func (r *Reader) Tail() Tail { return r.tail }

// Damage returns, in Salvage mode, the corruption met since the previous
// record: the first damaged line skipped before the current record, or
// the sequence rule the current record breaks. Nil when there was none.
func (r *Reader) Damage() error { return r.damage }

// Accepted reports, in Salvage mode, whether the current record continues
// the sequence (it may skip missing revisions): a record that repeats or
// goes back in revision, generation or time does not, and the sequence
// goes on from the record before it.
func (r *Reader) Accepted() bool { return r.accepted }

// Next advances to the next valid record of the source and reports
// whether there is one.
func (r *Reader) Next() bool {
	if r.err != nil || r.sc == nil {
		return false
	}
	r.damage, r.accepted = nil, true
	for r.sc.scan() {
		l := r.sc.current()
		var m Meta
		var payload []byte
		var err error
		switch {
		case l.tooLong:
			err = ErrTooLong
		case !l.complete:
			err = ErrNoNewline
		default:
			m, payload, err = Parse(l.b, r.maxPayload)
		}
		if errors.Is(err, ErrNewer) {
			if r.bad != nil && !r.Salvage {
				r.err = r.badFollowed()
				return false
			}
			r.err = &sessionstore.NewerRecordError{ID: r.id, Path: r.src.Path, Offset: l.off, Revision: m.Rev, Version: m.Version, Kind: m.Kind}
			return false
		}
		if err != nil {
			if !r.damaged(l, err) {
				return false
			}
			continue
		}
		if r.bad != nil {
			if !r.Salvage {
				r.err = r.badFollowed()
				return false
			}
			r.damage, r.bad, r.tail = r.badFollowed(), nil, Tail{}
		}
		if err := r.seq.Accept(m); err != nil {
			err = r.corrupt(l.off, m.Rev, r.named(m, l, err))
			if !r.Salvage {
				r.err = err
				return false
			}
			if r.damage == nil {
				r.damage = err
			}
			// A record further on continues the sequence (revisions are
			// missing); one that repeats or goes back does not.
			p, _ := r.seq.Prev()
			if m.Rev > p.Through() && m.Gen >= p.Gen && !m.Time.Before(p.Time) {
				r.seq = After(m)
			} else {
				r.accepted = false
			}
		}
		r.rec = Rec{Meta: m, Path: r.src.Path, Offset: l.off, LineLen: l.n, Payload: payload}
		r.remember(l, m)
		return true
	}
	if err := r.sc.failed(); err != nil {
		r.err = err
		return false
	}
	end := r.sc.offset()
	if r.bad != nil {
		r.tail.Start, r.tail.Bytes = r.bad.off, end-r.bad.off
	} else {
		r.tail = Tail{Start: end}
	}
	return false
}

// damaged takes a line that is not a record: the start or part of a tail,
// or corruption where no tail may be. It reports whether reading goes on.
func (r *Reader) damaged(l *line, err error) bool {
	if !r.src.Tail {
		r.err = r.corrupt(l.off, r.nextRev(l), fmt.Errorf("damaged record: %w", err))
		return false
	}
	if r.bad == nil {
		r.bad = &badLine{off: l.off, b: bytes.Clone(l.b), err: err}
	}
	if l.complete {
		if r.tail.Lines == 0 {
			r.tail.First, r.tail.FirstErr = bytes.Clone(l.b), err
			if l.b != nil {
				r.tail.ClaimedRev, r.tail.Claimed = PeekRev(l.b)
			}
		}
		r.tail.Lines++
	}
	return true
}

// badFollowed is the corruption of a damaged line that a valid one follows.
func (r *Reader) badFollowed() error {
	b := r.bad
	rev := r.nextRev(&line{b: b.b})
	return r.corrupt(b.off, rev, fmt.Errorf("damaged record followed by valid records: %w", b.err))
}

// nextRev is the revision expected where a damaged line is, or else the
// one it claims (a damaged envelope may claim anything).
func (r *Reader) nextRev(l *line) uint64 {
	if p, ok := r.seq.Prev(); ok {
		return p.Through() + 1
	}
	if rev, ok := PeekRev(l.b); ok && rev > 0 {
		return rev
	}
	return 0
}

func (r *Reader) corrupt(off int64, rev uint64, err error) error {
	return &sessionstore.CorruptionError{ID: r.id, Path: r.src.Path, Offset: off, Revision: rev, Err: err}
}

// remember keeps the identity of a record's line among the recent ones.
func (r *Reader) remember(l *line, m Meta) {
	r.recent[r.nrecent%recentLines] = recentLine{rev: m.Rev, n: l.n, crc: crcOfLine(l.b), off: l.off}
	r.nrecent++
}

// named adds to a sequence error, for a repeated revision, which earlier
// line the record copies exactly, when it is one of the recent ones.
func (r *Reader) named(m Meta, l *line, err error) error {
	crc := crcOfLine(l.b)
	for i := range min(r.nrecent, recentLines) {
		if x := r.recent[i]; x.rev == m.Rev && x.n == l.n && x.crc == crc {
			return fmt.Errorf("%w: the line at offset %d is an exact copy of revision %d's line at offset %d (a duplicated piece of the log)", err, l.off, m.Rev, x.off)
		}
	}
	return err
}

// crcOfLine returns the checksum digits of a valid line.
func crcOfLine(b []byte) string {
	if len(b) < crcSuffixLen {
		return ""
	}
	return string(b[len(b)-crcSuffixLen+len(crcKey) : len(b)-2])
}
