package record

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// A record is one line of a log. The envelope fields come first in a fixed
// order, then the payload (the sessnap snapshot, verbatim), then the
// checksum; the whole line is one JSON object, so `jq` reads it:
//
//	{"v":1,"schema":1,"rev":12,"gen":3,"time":"2026-11-29T12:00:00.123456789Z",
//	 "kind":"full","len":1234,"snap":{…1234 bytes…},"crc":"0a1b2c3d"}\n
//
//	v       record format version (Version)
//	schema  sessnap.SchemaVersion of the writer
//	rev     revision, from 1, +1 per record
//	gen     lease generation of the writer; never decreases
//	time    UTC, RFC 3339 with nanoseconds; never earlier than the previous
//	kind    "full": the payload is a whole snapshot; "delta" (format 2)
//	len     payload length in bytes
//	snap    the payload ("delta" for a delta record)
//	crc     CRC-32C (Castagnoli) of every byte of the line before `,"crc":"`,
//	        as 8 lower-case hex digits
//
// The parser is positional and strict: any deviation (a different key
// order, spaces, CRLF, a BOM) makes the line invalid. That strictness is
// what lets a reader tell a committed record from a torn one.
//
// Format 2 adds the kind "delta" (delta.go), whose payload key is "delta"
// instead of "snap":
//
//	{"v":2,"schema":1,"rev":13,"gen":3,"time":"…","kind":"delta","len":321,"delta":{…},"crc":"…"}\n
//
// A writer writes each record with the lowest version that holds it: full
// records as format 1 (so a log without deltas is byte for byte a format 1
// log, readable by every program), deltas as format 2. Readers accept both.

// Format versions ("v").
const (
	// Version1 is the original format: full records only.
	Version1 = 1
	// Version2 adds delta records.
	Version2 = 2
	// Version3 adds gap records.
	Version3 = 3
	// Version4 is a full or delta record whose snapshot holds references
	// to content kept out of line (blobs, FORMAT.md "Blobs"): a reader
	// must resolve them, so a program that cannot stops before it.
	Version4 = 4
	// Version5 is a delta record that drops messages ("drop", delta.go):
	// the revision of a rewind. A program that cannot apply the drop
	// stops before it, and so never appends after a rewind it misread.
	Version5 = 5
	// Version is the newest format this package reads. A line with a
	// valid checksum and a higher version, or a kind this package does not
	// know, was written by a newer program (ErrNewer).
	Version = Version5
)

// Record kinds.
const (
	// KindFull: the payload ("snap") is a whole snapshot.
	KindFull = "full"
	// KindDelta: the payload ("delta") turns the previous revision's
	// snapshot into this one's (format 2 on).
	KindDelta = "delta"
	// KindGap: the payload ("gap") says that revisions Rev to Last are
	// missing: a repair set their damaged records aside (format 3 on).
	KindGap = "gap"
)

// VersionOf returns the format version a record of kind is written with:
// the lowest that holds it, so that a log without deltas is a format 1
// log, readable by every program.
func VersionOf(kind string) int {
	switch kind {
	case KindDelta:
		return Version2
	case KindGap:
		return Version3
	}
	return Version1
}

// payloadKey returns the envelope key before a record's payload.
func payloadKey(kind string) string {
	switch kind {
	case KindDelta:
		return `,"delta":`
	case KindGap:
		return `,"gap":`
	}
	return `,"snap":`
}

// EnvelopeMax bounds the bytes a line holds around its payload, newline
// included: a reader's line cap is the payload cap plus EnvelopeMax.
const EnvelopeMax = 256

// Meta is a record's envelope.
type Meta struct {
	Version int
	Schema  int
	Rev     uint64
	Gen     uint64
	Time    time.Time
	Kind    string
	// Last is, for a gap record, the last missing revision (from its
	// payload); 0 for other kinds.
	Last uint64
}

// Through returns the last revision the record stands for: Rev, or the
// end of a gap. The record after it is revision Through()+1.
func (m Meta) Through() uint64 { return max(m.Rev, m.Last) }

// Parse errors: which check a line failed. Readers wrap them in a
// sessionstore.CorruptionError.
var (
	ErrFraming  = errors.New("record framing is invalid")
	ErrChecksum = errors.New("record checksum mismatch")
	ErrTooLong  = errors.New("record longer than the size cap")
	// ErrNewer reports a line whose checksum is valid but whose format
	// version or kind this program does not know: a newer program wrote
	// it. A torn write cannot produce a valid checksum, so such a line is
	// committed, never an uncommitted tail; readers stop before it and
	// writers refuse to append after it.
	ErrNewer = errors.New("record written by a newer program")
	// ErrCRLF reports a line that is valid but for a carriage return
	// before its newline: the log was converted to CRLF line endings.
	ErrCRLF = errors.New("CRLF line endings")
)

// Encode returns the line, with its newline, for m and payload.
func Encode(m Meta, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+EnvelopeMax)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(m.Version), 10)
	b = append(b, `,"schema":`...)
	b = strconv.AppendInt(b, int64(m.Schema), 10)
	b = append(b, `,"rev":`...)
	b = strconv.AppendUint(b, m.Rev, 10)
	b = append(b, `,"gen":`...)
	b = strconv.AppendUint(b, m.Gen, 10)
	b = append(b, `,"time":"`...)
	b = m.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","kind":"`...)
	b = append(b, m.Kind...)
	b = append(b, `","len":`...)
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, payloadKey(m.Kind)...)
	b = append(b, payload...)
	b = AppendCRC(b)
	return append(b, '\n')
}

// Parse parses one line (without its newline) and verifies its checksum.
// maxPayload bounds the payload length it accepts. The returned payload
// aliases line. A line with a valid checksum from a newer program fails
// with ErrNewer and the envelope fields it could read (at least Version,
// and Rev when the envelope's prefix is the one this program knows).
func Parse(line []byte, maxPayload int) (Meta, []byte, error) {
	var m Meta
	if len(line) < crcSuffixLen+len(`{"v":1}`) {
		return m, nil, ErrFraming
	}
	body, ok := SplitCRC(line)
	if !ok {
		if line[len(line)-1] == '\r' {
			if _, _, err := Parse(line[:len(line)-1], maxPayload); err == nil {
				return m, nil, ErrCRLF
			}
		}
		if body == nil {
			return m, nil, ErrFraming
		}
		return m, nil, ErrChecksum
	}
	p := parser{b: body}
	m.Version = int(p.uintField(`{"v":`, 1<<20))
	m.Schema = int(p.uintField(`,"schema":`, 1<<20))
	m.Rev = p.uintField(`,"rev":`, 1<<53-1)
	m.Gen = p.uintField(`,"gen":`, 1<<53-1)
	ts := p.stringField(`,"time":"`)
	m.Kind = string(p.stringField(`,"kind":"`))
	// The checksum is valid, so this line was written whole, on purpose:
	// a version or kind this program does not know is a newer program's.
	if m.Version > Version || p.err == nil && (!KnownKind(m.Kind) || Newer(m.Version, m.Kind)) {
		if p.err != nil {
			m.Rev, _ = PeekRev(line)
		}
		return m, nil, fmt.Errorf("%w: format %d, kind %q", ErrNewer, m.Version, m.Kind)
	}
	n := p.uintField(`,"len":`, 1<<53-1)
	p.literal(payloadKey(m.Kind))
	if p.err != nil {
		return m, nil, p.err
	}
	if n > uint64(maxPayload) {
		return m, nil, ErrTooLong
	}
	if uint64(len(p.b)-p.i) != n {
		return m, nil, fmt.Errorf("%w: payload is %d bytes, envelope says %d", ErrFraming, len(p.b)-p.i, n)
	}
	switch {
	case m.Version < Version1:
		return m, nil, fmt.Errorf("%w: record version %d", ErrFraming, m.Version)
	case m.Version < VersionOf(m.Kind):
		return m, nil, fmt.Errorf("%w: kind %q in a version %d record", ErrFraming, m.Kind, m.Version)
	case m.Rev == 0:
		return m, nil, fmt.Errorf("%w: revision 0", ErrFraming)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil || t.Location() != time.UTC || !bytes.Equal(t.AppendFormat(nil, time.RFC3339Nano), ts) {
		return m, nil, fmt.Errorf("%w: time %q", ErrFraming, ts)
	}
	m.Time = t
	payload := p.b[p.i:]
	if m.Kind == KindGap {
		g, err := ParseGap(payload)
		if err != nil {
			return m, nil, err
		}
		if g.Last < m.Rev {
			return m, nil, fmt.Errorf("%w: gap from revision %d to %d", ErrFraming, m.Rev, g.Last)
		}
		m.Last = g.Last
	}
	return m, payload, nil
}

// KnownKind reports whether kind is one this program reads.
func KnownKind(kind string) bool { return kind == KindFull || kind == KindDelta || kind == KindGap }

// Newer reports whether a record of format version v and kind kind was
// written by a newer program: a version above Version, a kind this
// package does not know, or a format 5 record that is not a delta (format
// 5 is the delta that drops messages; a full or gap record of format 5 is
// a later format's).
func Newer(v int, kind string) bool {
	return v > Version || !KnownKind(kind) || v == Version5 && kind != KindDelta
}

// PeekVersion extracts the format version a line's envelope starts with,
// evidence only (the line is not checked).
func PeekVersion(line []byte) (int, bool) {
	p := parser{b: line}
	v := p.uintField(`{"v":`, 1<<20)
	return int(v), p.err == nil
}

// PeekRev extracts the revision a damaged line claims, if its envelope
// prefix is intact enough to say. It is evidence only, never trusted as a
// record.
func PeekRev(line []byte) (uint64, bool) {
	p := parser{b: line}
	p.uintField(`{"v":`, 1<<20)
	p.uintField(`,"schema":`, 1<<20)
	rev := p.uintField(`,"rev":`, 1<<53-1)
	return rev, p.err == nil
}

// parser reads the fixed envelope left to right; the first failure sticks.
type parser struct {
	b   []byte
	i   int
	err error
}

func (p *parser) literal(s string) {
	if p.err != nil {
		return
	}
	if !bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		p.err = fmt.Errorf("%w: expected %s at byte %d", ErrFraming, s, p.i)
		return
	}
	p.i += len(s)
}

// uintField reads key then a decimal without leading zeros, at most max.
func (p *parser) uintField(key string, max uint64) uint64 {
	p.literal(key)
	if p.err != nil {
		return 0
	}
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if v > (max-d)/10 {
			p.err = fmt.Errorf("%w: number after %s too large", ErrFraming, key)
			return 0
		}
		v = v*10 + d
		p.i++
	}
	if p.i == start || p.i-start > 1 && p.b[start] == '0' {
		p.err = fmt.Errorf("%w: bad number after %s", ErrFraming, key)
		return 0
	}
	return v
}

// stringField reads key then bytes up to the closing quote. Envelope
// strings never contain quotes or escapes.
func (p *parser) stringField(key string) []byte {
	p.literal(key)
	if p.err != nil {
		return nil
	}
	j := bytes.IndexByte(p.b[p.i:], '"')
	if j < 0 || j > 64 {
		p.err = fmt.Errorf("%w: unterminated string after %s", ErrFraming, key)
		return nil
	}
	s := p.b[p.i : p.i+j]
	p.i += j + 1
	return s
}
