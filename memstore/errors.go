package memstore

import "errors"

// Sentinel errors of memstore itself. Everything else it returns wraps a
// sessionstore sentinel (sessionstore.ErrNotFound, ErrConflict, …).
var (
	// ErrNotHeld reports a Supersede of a session whose lease nobody holds:
	// there is no holder to take the lease from.
	ErrNotHeld = errors.New("memstore: lease not held")
)
