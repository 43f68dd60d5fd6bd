// Package blob is part content kept out of line, as the adapters that keep
// it in memory or in a database hold it (memstore, pgstore; jsonlstore
// keeps its own files): its address, the SHA-256 of the content; the check
// of content against a reference and its fetch from a source (Fetch); the Externalizer that sends content at
// or above a threshold out of line, and the pages of full records
// (internal/record) with it; and the check of the references a snapshot
// brings with it (Arrivals).
package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
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

// ErrMismatch reports content that is not what its reference says.
var ErrMismatch = errors.New("content does not match its reference")

// Check reports, wrapping ErrMismatch, content whose size or SHA-256 is
// not the one ref names.
func Check(ref session.ContentRef, content []byte) error {
	if int64(len(content)) != ref.Size {
		return fmt.Errorf("%w: %d bytes, the reference says %d", ErrMismatch, len(content), ref.Size)
	}
	if Hash(content) != ref.SHA256 {
		return fmt.Errorf("%w: its SHA-256 is not %s", ErrMismatch, ref.SHA256)
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

var _ record.PageStore = (*Externalizer)(nil)

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

// Check calls held with every reference in next's messages after those
// checked before (all of them, when next does not continue them), and
// returns held's first error. On success it remembers next as checked.
func (a *Arrivals) Check(next sessnap.Messages, held func(ref session.ContentRef) error) error {
	from := 0
	if n := len(a.checked); n > 0 && len(next) >= n && &next[0] == &a.checked[0] {
		from = n
	}
	var err error
	next[from:].Refs(func(ref session.ContentRef) {
		if err == nil {
			err = held(ref)
		}
	})
	if err != nil {
		return err
	}
	a.checked = next
	return nil
}

// Reset forgets what was checked: the next Check looks at every message.
func (a *Arrivals) Reset() { a.checked = nil }
