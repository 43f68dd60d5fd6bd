package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Back reads a log backwards from its end: the last record, the chain of
// records that rebuilds it, and the records just before. Its cost is the
// bytes it reads, never the length of the log.
type Back struct {
	f          io.ReaderAt
	size       int64
	id         session.SessionID
	path       string
	maxPayload int
	maxLine    int
	buf        []byte // one cached chunk of the file
	lo         int64  // its offset
	chunk      int    // the size of the next chunk read (nextChunk)
	// Newer is set when ChainTo met a newer program's record among the
	// records it checks before the chain: the chain reads, but a writer
	// must not append to the log.
	Newer *sessionstore.NewerRecordError
}

// NewBack returns a backward reader of the size bytes of f, which holds
// session id's log at path.
func NewBack(f io.ReaderAt, size int64, id session.SessionID, path string, maxPayload int) *Back {
	return &Back{f: f, size: size, id: id, path: path, maxPayload: maxPayload, maxLine: maxPayload + EnvelopeMax}
}

// tailSlack is what a torn append may leave beyond its own line: the NULs
// of the pages a crash extended the file with.
const tailSlack = ScanChunk

// TailLimit is the most bytes an uncommitted tail can hold: one torn
// append of a line of up to maxPayload bytes and its envelope, with the
// NULs of its pages. More bytes after the last valid record are
// corruption, never a tail.
func TailLimit(maxPayload int) int64 { return int64(maxPayload+EnvelopeMax) + 1 + tailSlack }

// Last returns the log's last committed line as a record, and the tail
// after it. rec is nil when the log holds no valid line at all (then the
// tail is the whole log). When the last committed line is a newer
// program's, rec holds what its envelope says (no payload) and err is a
// *sessionstore.NewerRecordError. Last reads back at most TailLimit bytes
// past the last valid line: a longer run of bytes without one is
// corruption (a *sessionstore.CorruptionError naming where it starts and
// how long it is), so a huge or sparse tail costs a bounded read.
func (b *Back) Last() (*Rec, Tail, error) {
	t := Tail{Start: b.size}
	floor := b.size - TailLimit(b.maxPayload) // no tail starts below it
	nl, ok, err := b.prevNL(b.size, floor)
	switch {
	case err != nil:
		return nil, t, err
	case !ok && floor > 0:
		return nil, t, b.tailTooLong(floor)
	case !ok:
		return nil, Tail{Start: 0, Bytes: b.size}, nil // not one newline: a partial line
	}
	if nl < b.size-1 {
		t.Start = nl + 1 // a partial line after the last newline
	}
	for lineEnd := nl; ; {
		// The line ending at lineEnd starts at most maxLine bytes before.
		lo := lineEnd - int64(b.maxLine) - 1
		prev, ok, err := b.prevNL(lineEnd, lo)
		if err != nil {
			return nil, t, err
		}
		start, tooLong := prev+1, false
		switch {
		case !ok && lo <= 0:
			start = 0
		case !ok:
			// Longer than any record: damage, and part of the tail if
			// the tail is not too long to be one.
			tooLong = true
			if prev, ok, err = b.prevNL(lo+1, floor); err != nil {
				return nil, t, err
			}
			switch {
			case ok:
				start = prev + 1
			case floor > 0:
				return nil, t, b.tailTooLong(floor)
			default:
				start = 0
			}
		}
		if !tooLong {
			line, err := b.readAt(start, lineEnd-start)
			if err != nil {
				return nil, t, err
			}
			m, payload, perr := Parse(line, b.maxPayload)
			if perr == nil || errors.Is(perr, ErrNewer) {
				rec := &Rec{Meta: m, Path: b.path, Offset: start, LineLen: lineEnd - start + 1, Payload: payload}
				t.Bytes = b.size - t.Start
				if perr != nil {
					rec.Payload = nil
					return rec, t, &sessionstore.NewerRecordError{ID: b.id, Path: b.path, Offset: start, Revision: m.Rev, Version: m.Version, Kind: m.Kind}
				}
				return rec, t, nil
			}
			t.First, t.FirstErr = line, perr
			t.ClaimedRev, t.Claimed = PeekRev(line)
		} else {
			t.First, t.FirstErr, t.Claimed = nil, ErrTooLong, false
		}
		if floor > 0 && start < floor {
			return nil, t, b.tailTooLong(floor)
		}
		t.Lines++
		t.Start = start
		if start == 0 {
			t.Bytes = b.size
			return nil, t, nil
		}
		lineEnd = start - 1
	}
}

// tailTooLong is the corruption of a log whose last bytes from floor on
// hold no valid line.
func (b *Back) tailTooLong(floor int64) error {
	return b.corrupt(floor, 0, fmt.Errorf(
		"the last %d bytes of the log (of %d) hold no valid record: more than a torn append can leave (%d bytes at most), so this is damage, not an uncommitted tail; nothing was copied or cut",
		b.size-floor, b.size, TailLimit(b.maxPayload)))
}

// prevNL returns the offset of the last newline in [floor, before) (the
// whole file before before when floor <= 0) and true, or false when there
// is none there.
func (b *Back) prevNL(before, floor int64) (int64, bool, error) {
	floor = max(floor, 0)
	for pos := before - 1; pos >= floor; {
		if b.buf == nil || pos < b.lo || pos >= b.lo+int64(len(b.buf)) {
			n := b.nextChunk()
			lo := max(0, pos+1-int64(n))
			if cap(b.buf) < n {
				b.buf = make([]byte, n)
			}
			b.buf = b.buf[:pos+1-lo]
			if _, err := b.f.ReadAt(b.buf, lo); err != nil {
				b.buf = nil
				return 0, false, readErr(err)
			}
			b.lo = lo
		}
		from := max(floor, b.lo) - b.lo
		if i := bytes.LastIndexByte(b.buf[from:pos-b.lo+1], '\n'); i >= 0 {
			return b.lo + from + int64(i), true, nil
		}
		pos = b.lo + from - 1
	}
	return -1, false, nil
}

// firstChunk is the size of a Back's first read: the last records of a
// log are most often short (a delta adding a message or two), and most
// backward reads need only them (the latest record, the few appended
// since a reader last looked). Each later read doubles it, up to
// ScanChunk, so a long walk back reads in ScanChunk pieces after a few
// smaller ones. A fresh process pays for every page of memory it
// touches: under load, a search's reads of 64 KiB at the end of each log
// it looked at were 2 ms of its 30 ms of CPU (W8), for a few KiB of
// records.
const firstChunk = 8 << 10

// nextChunk returns the size of the next chunk prevNL reads.
func (b *Back) nextChunk() int {
	n := max(b.chunk, firstChunk)
	b.chunk = min(2*n, ScanChunk)
	return n
}

// readAt returns n bytes at off, a fresh copy, from the cached chunk when
// it holds them (a backward walk over short lines reads each chunk once).
func (b *Back) readAt(off, n int64) ([]byte, error) {
	out := make([]byte, n)
	if b.buf != nil && off >= b.lo && off+n <= b.lo+int64(len(b.buf)) {
		copy(out, b.buf[off-b.lo:])
		return out, nil
	}
	if _, err := b.f.ReadAt(out, off); err != nil {
		return nil, readErr(err)
	}
	return out, nil
}

// readErr turns a short read of bytes the reader believed present (the
// log was truncated under it) into ErrShrunk.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrShrunk
	}
	return err
}

// Before returns the record whose line ends just before r, or nil when r
// is the log's first. A damaged line there is corruption (a valid record
// follows it); a newer program's is a *sessionstore.NewerRecordError.
func (b *Back) Before(r *Rec) (*Rec, error) {
	if r.Offset == 0 {
		return nil, nil
	}
	lineEnd := r.Offset - 1
	prev, ok, err := b.prevNL(lineEnd, lineEnd-int64(b.maxLine)-1)
	if err != nil {
		return nil, err
	}
	if !ok && lineEnd-int64(b.maxLine)-1 > 0 {
		return nil, b.corrupt(lineEnd, r.Rev-1, fmt.Errorf("damaged record before revision %d: %w", r.Rev, ErrTooLong))
	}
	start := prev + 1 // 0 when there is no newline before: the first line
	n := lineEnd - start
	line, err := b.readAt(start, n)
	if err != nil {
		return nil, err
	}
	m, payload, err := Parse(line, b.maxPayload)
	switch {
	case errors.Is(err, ErrNewer):
		return nil, &sessionstore.NewerRecordError{ID: b.id, Path: b.path, Offset: start, Revision: m.Rev, Version: m.Version, Kind: m.Kind}
	case err != nil:
		return nil, b.corrupt(start, r.Rev-1, fmt.Errorf("damaged record before revision %d: %w", r.Rev, err))
	}
	return &Rec{Meta: m, Path: b.path, Offset: start, LineLen: n + 1, Payload: payload}, nil
}

// At returns the record whose line starts at off (a place other evidence
// names), or an error when there is none.
func (b *Back) At(off int64) (*Rec, error) {
	if off < 0 || off >= b.size {
		return nil, fmt.Errorf("offset %d is outside the log", off)
	}
	// Read a chunk, then more while no newline ends the line, up to a
	// record's length: the cost is the record's, not the cap's.
	var buf []byte
	i := -1
	for want := min(int64(ScanChunk), b.size-off); i < 0; want = min(2*want, int64(b.maxLine)+1, b.size-off) {
		have := int64(len(buf))
		buf = append(buf, make([]byte, want-have)...)
		if _, err := b.f.ReadAt(buf[have:], off+have); err != nil && !errors.Is(err, io.EOF) {
			return nil, readErr(err)
		}
		if i = bytes.IndexByte(buf, '\n'); i < 0 && want == min(int64(b.maxLine)+1, b.size-off) {
			return nil, fmt.Errorf("no line ends within a record's length of offset %d", off)
		}
	}
	m, payload, err := Parse(buf[:i], b.maxPayload)
	if err != nil {
		return nil, err
	}
	return &Rec{Meta: m, Path: b.path, Offset: off, LineLen: int64(i) + 1, Payload: payload}, nil
}

func (b *Back) corrupt(off int64, rev uint64, err error) error {
	return &sessionstore.CorruptionError{ID: b.id, Path: b.path, Offset: off, Revision: rev, Err: err}
}

// How far behind the chain a holder checks the sequence before it builds
// on a log (ChainTo with window): at least BackCheckRecords records before
// the chain's full record, more while they lie within the last
// BackCheckBytes of the log, at most backCheckMax.
const (
	BackCheckRecords = 2
	BackCheckBytes   = 256 << 10
	backCheckMax     = 64
)

// ChainTo returns the chain that rebuilds last, the log's last record: the
// full record it starts at and the deltas after it, in order (last among
// them when it is a delta; none when it is full). Reading backwards, it
// checks that the chain is a valid sequence — a repeated revision, a
// revision or generation that goes back, a delta without its base are
// corruption, named — and that its deltas fit the record cap. Its cost is
// the chain's bytes, not the history.
//
// With window, it also checks the records just before the chain (see
// BackCheckRecords): what a holder about to append must know is sound, so
// that a duplicated piece at the end of the log (a `cat log >> log`, a sync
// tool) is refused rather than built on. A damaged line there ends that
// check (it is corruption a forward read reports; the records after it
// stand on their own), and a newer program's record there sets b.Newer.
func (b *Back) ChainTo(last *Rec, window bool) (full *Rec, deltas []*Rec, err error) {
	held := 0
	if last.Kind == KindDelta {
		deltas, held = []*Rec{last}, int(last.LineLen)
	} else {
		full = last
	}
	cur, extra := last, 0 // extra: records checked before the full record
	for full == nil || window && extra < backCheckMax && (extra < BackCheckRecords || cur.Offset >= b.size-BackCheckBytes) {
		prev, err := b.Before(cur)
		if full != nil && err != nil {
			var ne *sessionstore.NewerRecordError
			if errors.As(err, &ne) {
				b.Newer = ne
			}
			break // behind the chain: what it rebuilds is readable
		}
		if err != nil {
			return nil, nil, err
		}
		if prev == nil {
			if full == nil {
				return nil, nil, b.corrupt(cur.Offset, cur.Rev, fmt.Errorf(
					"revision %d is a delta and the log holds no record before it (its base is missing)", cur.Rev))
			}
			break
		}
		q := After(prev.Meta)
		if err := q.Check(cur.Meta); err != nil {
			return nil, nil, b.corrupt(cur.Offset, cur.Rev, err)
		}
		switch {
		case full != nil:
			extra++
		case prev.Kind == KindDelta:
			if held += int(prev.LineLen); held > b.maxLine {
				return nil, nil, b.corrupt(prev.Offset, prev.Rev, fmt.Errorf(
					"the delta chain of revision %d holds more than the record cap (%d bytes)", last.Rev, b.maxPayload))
			}
			deltas = append(deltas, prev)
		default: // a full record (Check refuses a delta after a gap)
			full = prev
		}
		cur = prev
	}
	slices.Reverse(deltas)
	return full, deltas, nil
}
