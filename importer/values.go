package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// RawJSON returns raw compacted, as the domain keeps raw JSON; nil for
// nothing, null, or JSON that is not valid.
func RawJSON(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	ok, compact := scan(raw)
	switch {
	case !ok:
		return nil
	case compact:
		return append(json.RawMessage(nil), raw...)
	}
	return compactTo(make(json.RawMessage, 0, len(raw)), raw)
}

// Text returns the non-empty texts of parts' text parts, a line apart:
// what a format that has one text per message (an error, a prompt event,
// a system line) says.
func Text(parts []session.Part) string {
	var texts []string
	for _, p := range parts {
		if p.Type == session.PartText && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Stamp is the time stamp the converters' writers give a line: at in UTC,
// RFC 3339 with nanoseconds at a fixed width, so that a line's time reads
// back exactly and lines of one file sort as their times do.
func Stamp(at time.Time) string { return at.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

// LineWriter writes JSONL for the converters' writers: one JSON value a
// line, without HTML escaping (text keeps its bytes). Each value is one
// line to every reader: encoding/json escapes the line breaks of strings
// but NEL (U+0085), which some readers end a line at (Python's
// splitlines), and LineWriter escapes that too. The first error sticks:
// later Puts do nothing and Flush returns it.
type LineWriter struct {
	bw  *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

// NewLineWriter returns a LineWriter writing to w.
func NewLineWriter(w io.Writer) *LineWriter {
	lw := &LineWriter{bw: bufio.NewWriter(w)}
	lw.enc = json.NewEncoder(&lw.buf)
	lw.enc.SetEscapeHTML(false)
	return lw
}

// nel is U+0085 in UTF-8. Outside strings JSON holds no such bytes, so
// its escape means the same document.
var nel = []byte("\u0085")

// Put writes v as a line.
func (lw *LineWriter) Put(v any) {
	if lw.err != nil {
		return
	}
	lw.buf.Reset()
	if lw.err = lw.enc.Encode(v); lw.err != nil {
		return
	}
	line := lw.buf.Bytes()
	if bytes.Contains(line, nel) {
		line = bytes.ReplaceAll(line, nel, []byte(`\u0085`))
	}
	_, lw.err = lw.bw.Write(line)
}

// Flush writes what is buffered and returns the first error.
func (lw *LineWriter) Flush() error {
	if lw.err != nil {
		return lw.err
	}
	return lw.bw.Flush()
}
