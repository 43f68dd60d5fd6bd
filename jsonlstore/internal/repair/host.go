package repair

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobgc"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/toolhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/session"
)

// Host is the store as repair needs it from the facade (package
// jsonlstore), which implements it: toolhost.Host, and the lease and
// writer that repair works under. Repair never imports the facade.
type Host interface {
	toolhost.Host
	// TakeLease takes existing session id's lease, of a generation above
	// every one its log holds, without the recovery Acquire runs (try:
	// fail at once, with a *sessionstore.LeaseHeldError, when it is held).
	TakeLease(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (Lease, error)
	// OpenWriter recovers session id's log under l, as Acquire does, and
	// returns its writer, which then owns l; on an error the caller still
	// releases l.
	OpenWriter(id session.SessionID, l Lease) (Writer, error)
}

// Lease is a lease TakeLease took, until OpenWriter's writer owns it.
type Lease interface {
	Release(ctx context.Context) error
}

// Writer is the writer of a session whose lease repair holds: the
// contract's, and what it knows of the session's blobs.
type Writer interface {
	sessionstore.Writer
	// ForgetBlob drops what the writer knows of the blob of hash, which
	// a blob collection removed (blobfile.Writer.Forget).
	ForgetBlob(hash string)
}

// Store is one store as repair sees it: its root, and the facade (Host)
// for what only the facade may do. It is cheap: the facade makes one for
// each call.
type Store struct {
	root *layout.Root
	host Host
}

// New returns the repair of the store at root, whose facade is host.
func New(root *layout.Root, host Host) *Store {
	return &Store{root: root, host: host}
}

// verifier is Verify's check of the store's sessions, whose forward scan
// finds what repair cuts at.
func (s *Store) verifier() *verify.Checker { return verify.New(s.root, s.host.Check) }

// blobs is the store's blob collection.
func (s *Store) blobs() *blobgc.Collector { return blobgc.New(s.root, s.host.Check) }
