package sessionstore

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/sessionstore/sessionstore/session"
)

// MaxIDLength bounds a session ID, keeping every path under a store root
// well inside file-name limits.
const MaxIDLength = 128

// ValidateID reports whether id is safe as a directory name on every
// supported platform: 1 to MaxIDLength bytes from [A-Za-z0-9._-], starting
// with a letter or digit (so no leading dot, no "." or ".."), with no
// separators, NULs or spaces. The error wraps ErrInvalidID.
func ValidateID(id session.SessionID) error {
	s := string(id)
	if s == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	if len(s) > MaxIDLength {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidID, len(s), MaxIDLength)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("%w: %q must start with a letter or digit", ErrInvalidID, s)
		}
		if !alnum && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("%w: %q contains byte %q", ErrInvalidID, s, c)
		}
	}
	return nil
}

// ValidateIDs is ValidateID of each of ids in turn: the first invalid ID's
// error, or nil.
func ValidateIDs(ids ...session.SessionID) error {
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return err
		}
	}
	return nil
}

var (
	idMu      sync.Mutex
	idEntropy = ulid.Monotonic(rand.Reader, 0)
)

// NewID mints a session ID: a ULID (26 characters of Crockford base32), so
// IDs sort by creation time (millisecond resolution) and, within one
// process, strictly increase even within a millisecond. It is safe as a
// directory name and safe for concurrent use.
func NewID() session.SessionID {
	idMu.Lock()
	defer idMu.Unlock()
	return session.SessionID(ulid.MustNew(ulid.Timestamp(time.Now()), idEntropy).String())
}
