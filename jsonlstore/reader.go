package jsonlstore

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"

	"github.com/sessionstore/sessionstore/internal/vfs"
)

// This file reads a log without modifying it. A reader works on a view:
// the log's identity and size when it opened it. It never reads past that
// size, so concurrent appends are invisible to it, and a replacement of the
// log (compaction) does not affect an open view. Only the bytes after the
// last valid record (an uncommitted tail) can change under a view, when a
// new holder truncates them; readers that meet an anomaly confirm it
// against a fresh view before reporting corruption (see store.confirm).

const scanChunk = 64 << 10

// view is a log opened for reading.
type view struct {
	f    vfs.File
	name string // path of the log relative to the store root
	id   vfs.Identity
	size int64
	// maxLine bounds the length of a line a reader will hold in memory.
	maxLine int
	// maxPayload is the payload cap passed to parseLine.
	maxPayload int
	// back caches the last chunk a backward read met: the chain of a delta
	// usually lies in the chunk that held the last record.
	back backScanner
}

func openView(fsys vfs.FS, name string, maxPayload int) (*view, error) {
	f, err := fsys.OpenFile(name, osRDONLY, 0)
	// A compaction may rename a new log over the old one between the
	// symlink check and the open; opening again sees the new log.
	for i := 0; i < maxReadAttempts && errors.Is(err, vfs.ErrReplaced); i++ {
		f, err = fsys.OpenFile(name, osRDONLY, 0)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &view{
		f: f, name: name, id: vfs.IdentityOf(fi), size: fi.Size(),
		maxLine: maxPayload + envelopeMax, maxPayload: maxPayload,
		back: backScanner{f: f},
	}, nil
}

func (v *view) Close() error { return v.f.Close() }

// tail describes the bytes after the last valid record.
type tail struct {
	Start int64 // offset of the first byte after the last valid record
	Bytes int64 // size - Start
	// Lines is the number of complete (newline-terminated) lines in it.
	Lines int
	// ClaimedRev is the revision the first complete line of the tail
	// claims in its (checksum-failing) envelope, if readable.
	ClaimedRev uint64
	Claimed    bool
	// First is the first complete line of the tail (for confirmation).
	First []byte
}

// last finds the last valid record by reading backwards from the end of
// the view: its cost is the size of that record plus the tail, not the
// length of the history. last is nil when no line of the log is valid.
func (v *view) last() (*rawRecord, tail, error) {
	// Read afresh: the tail may have changed since an earlier call. What
	// is cached afterwards lies before the last valid record or in the
	// tail; chainOf reads only committed records before it.
	v.back = backScanner{f: v.f}
	bs := &v.back
	t := tail{Start: v.size}
	nl, err := bs.prevNL(v.size)
	if err != nil {
		return nil, t, err
	}
	lineEnd := nl // the newline ending the line under consideration
	if nl < v.size-1 {
		t.Start = nl + 1 // a partial line after the last newline
	}
	for lineEnd >= 0 {
		prev, err := bs.prevNL(lineEnd)
		if err != nil {
			return nil, t, err
		}
		start := prev + 1
		if n := lineEnd - start; n <= int64(v.maxLine) {
			line, err := bs.readAt(start, n)
			if err != nil {
				return nil, t, err
			}
			rec, perr := parseLine(line, v.maxPayload)
			if perr == nil {
				rec.Offset, rec.LineLen = start, n+1
				t.Bytes = v.size - t.Start
				return &rec, t, nil
			}
			t.First = line
			t.ClaimedRev, t.Claimed = peekRev(line)
		} else {
			t.First, t.Claimed = nil, false
		}
		t.Lines++
		t.Start = start
		lineEnd = prev
	}
	t.Start = 0
	t.Bytes = v.size
	return nil, t, nil
}

// backScanner finds newlines backwards, caching one chunk.
type backScanner struct {
	f   vfs.File
	buf []byte
	lo  int64
}

// prevNL returns the offset of the last newline before offset before, or
// -1 if there is none.
func (s *backScanner) prevNL(before int64) (int64, error) {
	pos := before - 1
	for pos >= 0 {
		if s.buf == nil || pos < s.lo || pos >= s.lo+int64(len(s.buf)) {
			lo := max(0, pos+1-scanChunk)
			if cap(s.buf) < scanChunk {
				s.buf = make([]byte, scanChunk)
			}
			s.buf = s.buf[:pos+1-lo]
			if _, err := s.f.ReadAt(s.buf, lo); err != nil {
				s.buf = nil
				return 0, readErr(err)
			}
			s.lo = lo
		}
		if i := bytes.LastIndexByte(s.buf[:pos-s.lo+1], '\n'); i >= 0 {
			return s.lo + int64(i), nil
		}
		pos = s.lo - 1
	}
	return -1, nil
}

// readAt returns n bytes of the file at off: from the cached chunk when it
// holds them (a backward walk over short lines reads each chunk once),
// else read. The result is a fresh copy either way.
func (s *backScanner) readAt(off, n int64) ([]byte, error) {
	b := make([]byte, n)
	if s.buf != nil && off >= s.lo && off+n <= s.lo+int64(len(s.buf)) {
		copy(b, s.buf[off-s.lo:])
		return b, nil
	}
	if _, err := s.f.ReadAt(b, off); err != nil {
		return nil, readErr(err)
	}
	return b, nil
}

// readErr turns a short read of bytes the view believed present (the tail
// was truncated under it) into errViewChanged.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errViewChanged
	}
	return err
}

// errViewChanged reports that the file changed under a view in a way the
// view cannot absorb; the reader retries with a fresh view.
var errViewChanged = errors.New("log changed under reader")

// line is one line met by a forward scan: a valid record, or a bad line.
type line struct {
	Rec    *rawRecord // nil for a bad line
	Offset int64
	Bytes  []byte // the bad line (without newline), nil for long lines
	Err    error  // why the line is bad
	// Partial is true for bytes at the end of the view without a newline.
	Partial bool
}

// scan reads the view from offset 0 to its size and calls fn for each
// line in order. The Rec payload passed to fn aliases an internal buffer:
// fn must copy what it keeps. scan stops early when fn returns an error.
func (v *view) scan(fn func(l *line) error) error {
	return scanLines(io.NewSectionReader(v.f, 0, v.size), v.size, v.maxLine, v.maxPayload, fn)
}

// scanLines reads records from r, which holds size bytes (-1: read until
// EOF), and calls fn for each line in order; see view.scan. Lines longer
// than maxLine are reported as errTooLong without being held in memory.
func scanLines(r io.Reader, size int64, maxLine, maxPayload int, fn func(l *line) error) error {
	br := bufio.NewReaderSize(r, scanChunk)
	var off int64
	var acc []byte
	for size < 0 || off < size {
		acc = acc[:0]
		tooLong := false
		var n int64 // bytes of this line, newline included
		var err error
		for {
			var frag []byte
			frag, err = br.ReadSlice('\n')
			n += int64(len(frag))
			if !tooLong {
				if len(acc)+len(frag) > maxLine+1 {
					tooLong = true
					acc = acc[:0]
				} else {
					acc = append(acc, frag...)
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err != nil && err != io.EOF {
			return readErr(err)
		}
		if n == 0 {
			if size < 0 {
				return nil // the stream's end
			}
			// The view's size promised more bytes: the file shrank.
			return errViewChanged
		}
		complete := err == nil // ended with a newline
		l := line{Offset: off}
		switch {
		case tooLong:
			l.Err, l.Partial = errTooLong, !complete
		case !complete:
			l.Partial, l.Bytes, l.Err = true, acc, errNoNewline
		default:
			body := acc[:len(acc)-1]
			rec, perr := parseLine(body, maxPayload)
			if perr != nil {
				l.Bytes, l.Err = body, perr
			} else {
				rec.Offset, rec.LineLen = off, n
				l.Rec = &rec
			}
		}
		if err := fn(&l); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// copyRecord detaches a record's payload from scan buffers.
func copyRecord(r *rawRecord) *rawRecord {
	c := *r
	c.Payload = slices.Clone(r.Payload)
	return &c
}
