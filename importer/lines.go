package importer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"hash/maphash"
	"io"
)

// DefaultMaxLineBytes is the longest line a LineReader holds by default:
// large enough for an image pasted into a prompt, small enough that a
// damaged file cannot make a reader allocate without bound.
const DefaultMaxLineBytes = 64 << 20

// Line is one line of a JSONL source.
type Line struct {
	// No is the line's number, from 1.
	No int64
	// Data is the line without its line ending ("\n" or "\r\n") and, on
	// the first line, without a UTF-8 byte order mark. It is valid until
	// the next call to Next.
	Data []byte
	// Final reports a last line that ends without a newline: if it is not
	// complete JSON it is a torn write.
	Final bool
	// TooLong reports a line longer than the limit; Data is then empty.
	TooLong bool
}

// LineReader reads a JSONL source line by line, the way every converter
// reads one: it counts lines and bytes, hashes what it reads, accepts
// "\n" and "\r\n" endings and a leading byte order mark, and reads past a
// line longer than its limit without holding it. It does nothing else
// with the bytes.
//
//	lr := importer.NewLineReader(r, 0)
//	for lr.Next() {
//		l := lr.Line()
//		…
//	}
//	if err := lr.Err(); err != nil { … }
type LineReader struct {
	r    *bufio.Reader
	max  int
	sum  hash.Hash
	line Line
	buf  []byte

	lines, bytes int64
	err          error
	done         bool
}

// NewLineReader returns a LineReader of r holding lines of at most max
// bytes (0: DefaultMaxLineBytes).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max, sum: sha256.New()}
}

// Next advances to the next line and reports whether there is one.
func (lr *LineReader) Next() bool {
	if lr.done {
		return false
	}
	lr.buf = lr.buf[:0]
	tooLong, sawNewline, n := false, false, 0
	for {
		chunk, err := lr.r.ReadSlice('\n')
		n += len(chunk)
		lr.sum.Write(chunk)
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+2 { // +2: the line ending
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		if err == nil {
			sawNewline = true
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		lr.done = true
		if !errors.Is(err, io.EOF) {
			lr.err = err
			return false
		}
		break
	}
	if n == 0 {
		return false
	}
	lr.lines++
	lr.bytes += int64(n)
	data := lr.buf
	if sawNewline {
		data = bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
	}
	if lr.lines == 1 {
		data = bytes.TrimPrefix(data, []byte("\ufeff"))
	}
	if len(data) > lr.max {
		tooLong = true
	}
	if tooLong {
		data = nil
	}
	lr.line = Line{No: lr.lines, Data: data, Final: !sawNewline, TooLong: tooLong}
	return true
}

// Line returns the current line.
func (lr *LineReader) Line() Line { return lr.line }

// Err returns the read error that ended the lines, if any (not io.EOF).
func (lr *LineReader) Err() error { return lr.err }

// Fill sets r's Lines, Bytes and SHA256 from what lr read.
func (lr *LineReader) Fill(r *Report) {
	r.Lines, r.Bytes, r.SHA256 = lr.lines, lr.bytes, hex.EncodeToString(lr.sum.Sum(nil))
}

// LineSet remembers lines by a 128-bit hash, to tell a line seen before
// without keeping the lines. The hash is hash/maphash under two seeds of
// the set's own: a hundred times cheaper than SHA-256, and two distinct
// lines that hash alike (and so one taken for a copy of the other) are a
// chance of one in 2^128 per pair. The zero value is empty.
type LineSet struct {
	seeds [2]maphash.Seed
	seen  map[[2]uint64]struct{}
}

// First reports whether line is new to the set, and adds it.
func (s *LineSet) First(line []byte) bool {
	if s.seen == nil {
		s.seen = make(map[[2]uint64]struct{})
		s.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	}
	k := [2]uint64{maphash.Bytes(s.seeds[0], line), maphash.Bytes(s.seeds[1], line)}
	if _, ok := s.seen[k]; ok {
		return false
	}
	s.seen[k] = struct{}{}
	return true
}
