package jsonlstore

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"
)

// A record is one line of log.jsonl. The envelope fields come first in a
// fixed order, then the payload (the sessnap snapshot, verbatim), then the
// checksum; the whole line is one JSON object, so `jq` reads it:
//
//	{"v":1,"schema":1,"rev":12,"gen":3,"time":"2026-11-29T12:00:00.123456789Z",
//	 "kind":"full","len":1234,"snap":{…1234 bytes…},"crc":"0a1b2c3d"}\n
//
//	v       record format version (RecordVersion)
//	schema  sessnap.SchemaVersion of the writer
//	rev     revision, from 1, +1 per record
//	gen     lease generation of the writer; never decreases
//	time    UTC, RFC 3339 with nanoseconds; never earlier than the previous
//	kind    "full": the payload is a whole snapshot
//	len     payload length in bytes
//	snap    the payload
//	crc     CRC-32C (Castagnoli) of every byte of the line before `,"crc":"`,
//	        as 8 lower-case hex digits
//
// The parser is positional and strict: any deviation (a different key
// order, spaces, CRLF, a BOM) makes the line invalid. That strictness is
// what lets a reader tell a committed record from a torn one.

// RecordVersion is the record format version ("v").
const RecordVersion = 1

// Record kinds.
const (
	KindFull = "full"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	crcKey      = `,"crc":"`
	crcSuffixSz = len(crcKey) + 8 + len(`"}`) // ,"crc":"xxxxxxxx"}
	// envelopeMax bounds the envelope bytes around a payload.
	envelopeMax = 256
)

// meta is a record's envelope.
type meta struct {
	Version int
	Schema  int
	Rev     uint64
	Gen     uint64
	Time    time.Time
	Kind    string
}

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
func encodeRecord(m meta, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+envelopeMax)
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
	b = append(b, `,"snap":`...)
	b = append(b, payload...)
	sum := crc32.Checksum(b, castagnoli)
	b = append(b, crcKey...)
	b = appendHex32(b, sum)
	b = append(b, "\"}\n"...)
	return b
}

func appendHex32(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, digits[(v>>uint(shift))&0xf])
	}
	return b
}

// Parse errors: what check a line failed. They are wrapped in a
// sessionstore.CorruptionError by readers.
var (
	errNoNewline = errors.New("record has no terminating newline")
	errFraming   = errors.New("record framing is invalid")
	errChecksum  = errors.New("record checksum mismatch")
	errTooLong   = errors.New("record longer than the size cap")
)

// parseLine parses one line (without its newline) and verifies its
// checksum. maxPayload bounds the payload length it accepts. The returned
// payload aliases line.
func parseLine(line []byte, maxPayload int) (rawRecord, error) {
	var r rawRecord
	if len(line) < crcSuffixSz+len(`{"v":1}`) {
		return r, errFraming
	}
	suffix := line[len(line)-crcSuffixSz:]
	if !bytes.HasPrefix(suffix, []byte(crcKey)) || !bytes.HasSuffix(suffix, []byte(`"}`)) {
		return r, errFraming
	}
	want, ok := parseHex32(suffix[len(crcKey) : len(crcKey)+8])
	if !ok {
		return r, errFraming
	}
	body := line[:len(line)-crcSuffixSz]
	if crc32.Checksum(body, castagnoli) != want {
		return r, errChecksum
	}
	p := parser{b: body}
	r.Version = int(p.uintField(`{"v":`, 1<<20))
	r.Schema = int(p.uintField(`,"schema":`, 1<<20))
	r.Rev = p.uintField(`,"rev":`, 1<<53-1)
	r.Gen = p.uintField(`,"gen":`, 1<<53-1)
	ts := p.stringField(`,"time":"`)
	r.Kind = string(p.stringField(`,"kind":"`))
	n := p.uintField(`,"len":`, 1<<53-1)
	p.literal(`,"snap":`)
	if p.err != nil {
		return r, p.err
	}
	if n > uint64(maxPayload) {
		return r, errTooLong
	}
	if uint64(len(p.b)-p.i) != n {
		return r, fmt.Errorf("%w: payload is %d bytes, envelope says %d", errFraming, len(p.b)-p.i, n)
	}
	if r.Version != RecordVersion {
		return r, fmt.Errorf("%w: record version %d", errFraming, r.Version)
	}
	if r.Rev == 0 {
		return r, fmt.Errorf("%w: revision 0", errFraming)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil || t.Location() != time.UTC || !bytes.Equal(t.AppendFormat(nil, time.RFC3339Nano), ts) {
		return r, fmt.Errorf("%w: time %q", errFraming, ts)
	}
	r.Time = t
	r.Payload = p.b[p.i:]
	return r, nil
}

func parseHex32(b []byte) (uint32, bool) {
	var v uint32
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
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
		p.err = fmt.Errorf("%w: expected %s at byte %d", errFraming, s, p.i)
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
			p.err = fmt.Errorf("%w: number after %s too large", errFraming, key)
			return 0
		}
		v = v*10 + d
		p.i++
	}
	if p.i == start || p.i-start > 1 && p.b[start] == '0' {
		p.err = fmt.Errorf("%w: bad number after %s", errFraming, key)
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
		p.err = fmt.Errorf("%w: unterminated string after %s", errFraming, key)
		return nil
	}
	s := p.b[p.i : p.i+j]
	p.i += j + 1
	return s
}

// peekRev extracts the revision a damaged line claims, if its envelope
// prefix is intact enough to say. It is evidence only, never trusted as a
// record.
func peekRev(line []byte) (uint64, bool) {
	p := parser{b: line}
	p.uintField(`{"v":`, 1<<20)
	p.uintField(`,"schema":`, 1<<20)
	rev := p.uintField(`,"rev":`, 1<<53-1)
	return rev, p.err == nil
}

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
