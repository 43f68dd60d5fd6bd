package sessionstore

import (
	"context"
	"fmt"

	"github.com/sessionstore/sessionstore/session"
)

// DefaultBlobThreshold is the size from which the adapters keep part
// content (a text, a tool output, an image's data, encrypted reasoning) out
// of line by default: stored once per session under its SHA-256 and
// referenced from the records, so that an append costs what changed and
// the same content attached many times is held once.
const DefaultBlobThreshold = 16 << 10

// BlobReader is a Store that keeps part content out of line and can read
// it by its reference. ReadBlob uses it when the store has it.
type BlobReader interface {
	Store
	// ReadBlob returns the content session id keeps for ref (its SHA-256
	// and size; the field it fills does not matter), checked against
	// both. It takes no lease and modifies nothing. Errors: ErrInvalidID,
	// ErrClosed, ErrNotFound for an unknown session or content the session
	// does not hold, a *CorruptionError for content that is not what ref
	// says (damaged), I/O errors.
	ReadBlob(ctx context.Context, id session.SessionID, ref session.ContentRef) ([]byte, error)
}

// BlobSource gives the content a reference names, for a copy of records
// that reference it (the adapters' Import): the importer checks what it
// returns against the reference's size and SHA-256. An error that wraps
// ErrNotFound or ErrCorrupt says the source lacks the content.
type BlobSource func(ref session.ContentRef) ([]byte, error)

// ReadBlob reads the content session id of s keeps for ref: with s's own
// ReadBlob when s is a BlobReader, else it fails with ErrNotFound (a store
// that keeps no content out of line holds none). It is how content moves
// between stores with the records that reference it (`sessions migrate`).
func ReadBlob(ctx context.Context, s Store, id session.SessionID, ref session.ContentRef) ([]byte, error) {
	if r, ok := s.(BlobReader); ok {
		return r.ReadBlob(ctx, id, ref)
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: session %s: blob %s (the store keeps no content out of line)", ErrNotFound, id, ref.SHA256)
}
