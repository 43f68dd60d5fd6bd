package repair

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobgc"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/session"
)

// Host is the store as repair needs it from the facade (package
// jsonlstore), which implements it: the checks every read starts with,
// and the lease and writer that repair works under. Repair never imports
// the facade.
type Host interface {
	// Store is the store itself: Repair waits for a lease with
	// sessionstore.AcquireWithin, which calls its Lease (and Acquire and
	// TryAcquire, which Repair replaces when it cuts or salvages).
	sessionstore.Store
	// Check returns what stops any read of session id before it starts:
	// sessionstore.ErrClosed, ctx's error, an invalid ID.
	Check(ctx context.Context, id session.SessionID) error
	// TakeLease takes existing session id's lease, of a generation above
	// every one its log holds, without the recovery Acquire runs (try:
	// fail at once, with a *sessionstore.LeaseHeldError, when it is held).
	TakeLease(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (Lease, error)
	// CheckWritable runs under a lease just taken, before anything is
	// written: session id's directory holds no symlink and its log is one
	// a holder may write to.
	CheckWritable(id session.SessionID) error
	// OpenWriter recovers session id's log under l, as Acquire does, and
	// returns its writer, which then owns l; on an error the caller still
	// releases l.
	OpenWriter(id session.SessionID, l Lease) (Writer, error)
	// SaveForensic copies n bytes of v from off into a new file of session
	// id's forensic/ named after what, durably (file and directory
	// synced), and returns its path relative to the root; on an error it
	// leaves no file.
	SaveForensic(id session.SessionID, what string, off int64, v *logfile.View, n int64) (string, error)
	// InspectLease reads the lease of directory dir (an absolute path)
	// without taking it.
	InspectLease(ctx context.Context, dir string) (fslease.Status, error)
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
