package importer

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"

	"github.com/sessionstore/sessionstore/session"
)

// This file holds the steps every converter takes the same way: reading a
// source line by line into a transcript, decoding a line or counting why
// it cannot be, loading a source file of an fs.FS, and choosing what a
// written file claims to be.

// Convert reads r line by line (NewLineReader, lines of at most
// maxLineBytes), hands each line to line, and returns the transcript
// finish then makes, its report filled with what was read (LineReader.Fill).
// Only an error reading r is returned, as "read: …".
func Convert(r io.Reader, maxLineBytes int, line func(Line), finish func() *Transcript) (*Transcript, error) {
	lr := NewLineReader(r, maxLineBytes)
	for lr.Next() {
		line(lr.Line())
	}
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	t := finish()
	lr.Fill(&t.Report)
	return t, nil
}

// Decode decodes l into each of vs (DecodeLine) and reports whether it
// could. A line it could not decode is counted in r as skipped for its
// reason: too long, empty (white space only), torn (the final line, not
// complete JSON) or invalid JSON.
func (l Line) Decode(r *Report, vs ...any) bool {
	switch {
	case l.TooLong:
		r.Skip(SkipTooLong, "")
	case len(bytes.TrimSpace(l.Data)) == 0:
		r.Skip(SkipEmpty, "")
	case DecodeLine(l.Data, vs...) != nil:
		if l.Final {
			r.Skip(SkipTorn, "")
		} else {
			r.Skip(SkipInvalidJSON, "")
		}
	default:
		return true
	}
	return false
}

// ParseFile opens name of fsys, parses it with parse and records name as
// the transcript's Path. An error opening name is returned as it is, one
// from parse as "name: …". Only a regular file is read: anything else (a
// device such as /dev/zero, which never ends) fails with ErrNotRegular.
// An fs.FS whose Open blocks on a named pipe (os.DirFS) blocks here too:
// a Tree's FS opens one without blocking, and refuses it.
func ParseFile(fsys fs.FS, name string, parse func(io.Reader) (*Transcript, error)) (*Transcript, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read-only: closing cannot lose data
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: NotRegularError(fi.Mode())}
	}
	t, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t.Path = name
	return t, nil
}

// Claims returns the session ID and version a converter's writer puts in
// the file it writes of s: id and version as given, else those of s's
// origin when s was imported from tool, else s's ID and "sessionstore".
func Claims(s *session.Session, tool, id, version string) (string, string) {
	if o := s.Origin(); o != nil && o.Tool == tool {
		if id == "" {
			id = o.SessionID
		}
		if version == "" {
			version = o.Version
		}
	}
	if id == "" {
		id = string(s.ID())
	}
	if version == "" {
		version = "sessionstore"
	}
	return id, version
}
