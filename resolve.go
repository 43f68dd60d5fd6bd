package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore/session"
)

// idsOrAll validates ids, or returns every session of s when there are
// none: the sessions a fallback of Verify or DiskUsage goes through.
func idsOrAll(ctx context.Context, s Store, ids []session.SessionID) ([]session.SessionID, error) {
	if len(ids) == 0 {
		return s.IDs(ctx)
	}
	if err := ValidateIDs(ids...); err != nil {
		return nil, err
	}
	return ids, nil
}

// AmbiguousIDError reports a prefix that more than one session's ID
// starts with (ErrAmbiguousID).
type AmbiguousIDError struct {
	Prefix     string
	Candidates []session.SessionID // in ID order
}

func (e *AmbiguousIDError) Error() string {
	names := make([]string, len(e.Candidates))
	for i, c := range e.Candidates {
		names[i] = string(c)
	}
	return fmt.Sprintf("sessionstore: session ID %q is ambiguous: %d sessions start with it: %s",
		e.Prefix, len(e.Candidates), strings.Join(names, ", "))
}

// Unwrap returns ErrAmbiguousID.
func (e *AmbiguousIDError) Unwrap() error { return ErrAmbiguousID }

// ErrAmbiguousID is wrapped by *AmbiguousIDError.
var ErrAmbiguousID = errors.New("sessionstore: ambiguous session ID")

// ResolveID returns the session of s that name names, as git takes a
// unique prefix of a hash: the session whose ID is name, else the one
// session whose ID starts with name, compared without regard to case (so
// a ULID typed in lower case works). Errors: ErrInvalidID for a name no ID
// can start with, ErrNotFound when no session matches, an
// *AmbiguousIDError (ErrAmbiguousID) naming the candidates when several
// do, and those of s.IDs.
func ResolveID(ctx context.Context, s Store, name string) (session.SessionID, error) {
	id := session.SessionID(name)
	if err := ValidateID(id); err != nil {
		return "", err
	}
	_, err := s.Lease(ctx, id)
	if !errors.Is(err, ErrNotFound) {
		// It exists (in whatever state): the command's own call says more.
		return id, nil
	}
	all, lerr := s.IDs(ctx)
	if lerr != nil {
		return "", lerr
	}
	var matches []session.SessionID
	for _, c := range all {
		if len(c) >= len(name) && strings.EqualFold(string(c[:len(name)]), name) {
			matches = append(matches, c)
		}
	}
	switch len(matches) {
	case 0:
		return "", err
	case 1:
		return matches[0], nil
	}
	slices.Sort(matches)
	return "", &AmbiguousIDError{Prefix: name, Candidates: matches}
}
