package record

import (
	"bufio"
	"errors"
	"io"
)

// ScanChunk is the unit in which logs are read, forwards and backwards.
const ScanChunk = 64 << 10

// ErrNoNewline reports bytes at the end of a source without a newline: a
// line whose write never completed.
var ErrNoNewline = errors.New("record has no terminating newline")

// ErrShrunk reports a source that ended before the size it was opened
// with: the file was truncated under the reader, which should read again.
var ErrShrunk = errors.New("log changed under the reader")

// line is one line met by a forward scan.
type line struct {
	off      int64
	n        int64  // bytes, newline included
	b        []byte // without the newline; nil when too long
	complete bool   // ended with a newline
	tooLong  bool
	// huge is set for a line longer than any tail can be (TailLimit): the
	// scanner stopped reading it there, and it is corruption wherever it
	// is, so no read of a log ever costs more than that past the damage.
	huge bool
}

// lineFeed is a source of lines one at a time (stored lines: a table's
// rows), each with its newline.
type lineFeed struct {
	next func() ([]byte, error)
	off  int64
	l    line
	err  error
}

func (f *lineFeed) scan() bool {
	if f.err != nil {
		return false
	}
	b, err := f.next()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			f.err = err
		}
		return false
	}
	n := int64(len(b))
	complete := n > 0 && b[n-1] == '\n'
	if complete {
		b = b[:n-1]
	}
	f.l = line{off: f.off, n: n, b: b, complete: complete}
	f.off += n
	return true
}

func (f *lineFeed) current() *line { return &f.l }
func (f *lineFeed) failed() error  { return f.err }
func (f *lineFeed) offset() int64  { return f.off }

// lines is what a Reader reads lines from.
type lines interface {
	scan() bool
	current() *line
	failed() error
	offset() int64 // bytes read so far
}

// scanner splits a source into lines, holding at most maxLine bytes of
// one in memory (a longer line is reported as too long, not held). The
// source holds exactly size bytes (an io.SectionReader of a file as it was
// opened, so appends made since are not read); ending sooner is ErrShrunk.
type scanner struct {
	br      *bufio.Reader
	size    int64 // bytes the source must hold; -1: until EOF
	off     int64
	maxLine int
	limit   int64 // TailLimit: the most a damaged run may be
	acc     []byte
	l       line
	err     error
	stopped bool // a huge line ended the scan
}

func newScanner(r io.Reader, size int64, maxLine int) *scanner {
	return &scanner{br: bufio.NewReaderSize(r, scanBuffer(size)), size: size, maxLine: maxLine, limit: int64(maxLine) + 1 + tailSlack}
}

// scanBuffer is the buffer a scanner reads a source of size bytes (-1:
// unknown) through: ScanChunk, or the source's size when it is smaller.
// A source that small gains nothing from a bigger buffer, and a full
// backup scans thousands of them (a ScanChunk each was most of the
// allocation its check of the copies made); a line longer than the
// buffer is read in fragments (scan).
func scanBuffer(size int64) int {
	if size < 0 || size >= ScanChunk {
		return ScanChunk
	}
	return max(int(size), 16) // bufio's least
}

func (s *scanner) current() *line { return &s.l }
func (s *scanner) failed() error  { return s.err }
func (s *scanner) offset() int64  { return s.off }

// scan reads the next line; false at the source's end or on an error.
func (s *scanner) scan() bool {
	if s.err != nil || s.stopped || s.size >= 0 && s.off >= s.size {
		return false
	}
	s.acc = s.acc[:0]
	tooLong := false
	var n int64
	var err error
	for {
		var frag []byte
		frag, err = s.br.ReadSlice('\n')
		n += int64(len(frag))
		if !tooLong {
			if len(s.acc)+len(frag) > s.maxLine+1 {
				tooLong = true
				s.acc = s.acc[:0]
			} else {
				s.acc = append(s.acc, frag...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		if n > s.limit {
			s.l = line{off: s.off, n: n, tooLong: true, huge: true}
			s.off += n
			s.stopped = true
			return true
		}
	}
	if err != nil && err != io.EOF {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = ErrShrunk
		}
		s.err = err
		return false
	}
	if n == 0 {
		if s.size >= 0 {
			s.err = ErrShrunk // the size promised more bytes
		}
		return false
	}
	complete := err == nil
	s.l = line{off: s.off, n: n, complete: complete, tooLong: tooLong}
	if !tooLong {
		s.l.b = s.acc
		if complete {
			s.l.b = s.acc[:len(s.acc)-1]
		}
	}
	s.off += n
	return true
}
