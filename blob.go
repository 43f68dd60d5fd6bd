package sessionstore

import "github.com/sessionstore/sessionstore/session"

// DefaultBlobThreshold is the size from which the adapters keep part
// content (a text, a tool output, an image's data, encrypted reasoning) out
// of line by default: stored once per session under its SHA-256 and
// referenced from the records, so that an append costs what changed and
// the same content attached many times is held once.
const DefaultBlobThreshold = 16 << 10

// BlobSource gives the content a reference names, for a copy of records
// that reference it (the adapters' Import): the importer checks what it
// returns against the reference's size and SHA-256. An error that wraps
// ErrNotFound or ErrCorrupt says the source lacks the content.
type BlobSource func(ref session.ContentRef) ([]byte, error)
