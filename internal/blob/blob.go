package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Hash returns the address of content: its SHA-256, as 64 lower-case hex
// digits (session.ContentRef.SHA256).
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// ValidHash reports whether s is an address: 64 lower-case hex digits.
func ValidHash(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// HashReader reads r to its end, or to limit+1 bytes, keeping none of
// them, and returns how many it read and their address (Hash): content
// checked as it streams.
func HashReader(r io.Reader, limit int64) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, limit+1))
	if err != nil {
		return n, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// Threshold returns the size from which content goes out of line for an
// Options.BlobThreshold of n: 0 is sessionstore.DefaultBlobThreshold, a
// negative n never (everything inline), any other n itself.
func Threshold(n int) int {
	if n == 0 {
		return sessionstore.DefaultBlobThreshold
	}
	return n
}

// ErrMismatch reports content that is not what its reference says.
var ErrMismatch = errors.New("content does not match its reference")

// SizeMismatch is the error of content of got bytes whose reference says
// want.
func SizeMismatch(got, want int64) error {
	return fmt.Errorf("%w: %d bytes, the reference says %d", ErrMismatch, got, want)
}

// LongerThan is the error of content that goes on past the want bytes
// its reference says (read no further).
func LongerThan(want int64) error {
	return fmt.Errorf("%w: more than %d bytes, the reference says %d", ErrMismatch, want, want)
}

// HashMismatch is the error of content whose SHA-256 is not the one its
// reference names (which the caller's message names: the blob's file, or
// the reference).
func HashMismatch() error {
	return fmt.Errorf("%w: its SHA-256 differs", ErrMismatch)
}

// Check reports, wrapping ErrMismatch, content whose size or SHA-256 is
// not the one ref names.
func Check(ref session.ContentRef, content []byte) error {
	if int64(len(content)) != ref.Size {
		return SizeMismatch(int64(len(content)), ref.Size)
	}
	return CheckHash(ref.SHA256, content)
}

// CheckHash reports, wrapping ErrMismatch, content whose SHA-256 is not
// hash (its size unchecked: a reader that read content of any size).
func CheckHash(hash string, content []byte) error {
	if Hash(content) != hash {
		return HashMismatch()
	}
	return nil
}

// ErrMissing reports content a source does not give: it lacks it, or
// gives other bytes than the reference names.
var ErrMissing = errors.New("content missing from the source")

// Fetch returns the content src gives for ref (a sessionstore.BlobSource),
// checked against ref. Content src lacks (a nil src, an error that wraps
// sessionstore.ErrNotFound or ErrCorrupt) or gives wrong is an error
// wrapping ErrMissing, which says why but wraps nothing else (a missing
// blob is not a missing session); src's other errors are returned as they
// are.
func Fetch(src func(session.ContentRef) ([]byte, error), ref session.ContentRef) ([]byte, error) {
	missing := func(why string) error {
		return fmt.Errorf("%w: %s (%d bytes): %s", ErrMissing, ref.SHA256, ref.Size, why)
	}
	if src == nil {
		return nil, missing("no source of content")
	}
	content, err := src(ref)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound), errors.Is(err, sessionstore.ErrCorrupt):
		return nil, missing(err.Error())
	case err != nil:
		return nil, err
	}
	if err := Check(ref, content); err != nil {
		return nil, missing(err.Error())
	}
	return content, nil
}

// Externalizer is a sessnap.Externalizer that keeps content of at least
// Threshold bytes out of line: Put stores it under its address (Put is
// called for every such content, stored before or not: it skips what it
// holds), and the part gets its reference. It is also the record.PageStore
// of the same writer: a page is stored as content is.
type Externalizer struct {
	// Threshold is the size from which content goes out of line; 0 or
	// less keeps everything inline.
	Threshold int
	Put       func(hash string, content []byte) error
}

// Externalize implements sessnap.Externalizer.
func (e *Externalizer) Externalize(field string, content []byte) (session.ContentRef, bool, error) {
	if e.Threshold <= 0 || len(content) < e.Threshold {
		return session.ContentRef{}, false, nil
	}
	hash := Hash(content)
	if err := e.Put(hash, content); err != nil {
		return session.ContentRef{}, false, err
	}
	return session.ContentRef{Field: field, SHA256: hash, Size: int64(len(content))}, true, nil
}

// PutPage implements record.PageStore: content, a page's bytes, whatever
// its size, goes to Put under its address.
func (e *Externalizer) PutPage(content []byte) (string, error) {
	hash := Hash(content)
	return hash, e.Put(hash, content)
}

// Arrivals checks the references a writer's snapshots bring with them:
// parts that arrive holding a session.ContentRef instead of their content
// (loaded without it) must name content the session holds. It looks only
// at the messages after those it checked before when the next snapshot's
// conversation continues them — the same memory, as sessnap.Of shares a
// growing session's messages, which never change once appended — and at
// every message otherwise. So a writer's check costs what the append adds.
// It relies on the session's content only ever being added to while the
// writer holds its lease (a writer that removes content resets it).
//
// The zero value has checked nothing.
type Arrivals struct {
	checked sessnap.Messages
}

// Check checks the references in next's messages after those checked
// before (all of them, when next does not continue them): each must name,
// with its size, content session id holds. size returns the size of the
// content of hash the session holds and whether it holds it (nil: the
// session holds none); it is asked only about valid addresses, and its
// error is returned as it is. A reference to content the session does not
// hold is an error wrapping sessionstore.ErrInvalidSnapshot. On success
// Check remembers next as checked.
func (a *Arrivals) Check(id session.SessionID, next sessnap.Messages, size func(hash string) (int64, bool, error)) error {
	from := 0
	if n := len(a.checked); n > 0 && len(next) > 0 && &next[0] == &a.checked[0] {
		from = min(n, len(next)) // a rewind keeps checked messages only
	}
	var err error
	next[from:].Refs(func(ref session.ContentRef) {
		if err == nil {
			err = held(id, ref, size)
		}
	})
	if err != nil {
		return err
	}
	a.checked = next
	return nil
}

// held reports, as ErrInvalidSnapshot, a reference to content the session
// does not hold with that size (Arrivals.Check).
func held(id session.SessionID, ref session.ContentRef, size func(hash string) (int64, bool, error)) error {
	if ValidHash(ref.SHA256) && size != nil {
		n, ok, err := size(ref.SHA256)
		if err != nil {
			return err
		}
		if ok && n == ref.Size {
			return nil
		}
	}
	return fmt.Errorf("%w: session %s: a part references content the session does not hold (SHA-256 %s, %d bytes)",
		sessionstore.ErrInvalidSnapshot, id, ref.SHA256, ref.Size)
}

// Held is the content a session holds, hash → size: its Size is the size
// function of Arrivals.Check.
type Held map[string]int64

// Size returns the size of the content of hash h holds, and whether it
// holds it.
func (h Held) Size(hash string) (int64, bool, error) {
	n, ok := h[hash]
	return n, ok, nil
}

// Refuse refuses, as Arrivals.Check does, msgs holding any reference:
// the check of a session that holds no content (one being created, or a
// store that keeps none out of line). It looks at every message.
func Refuse(id session.SessionID, msgs sessnap.Messages) error {
	return new(Arrivals).Check(id, msgs, nil)
}

// Reset forgets what was checked: the next Check looks at every message.
func (a *Arrivals) Reset() { a.checked = nil }
