package offline

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// Host is the store as the offline tools need it from the facade
// (package jsonlstore), which implements it: the checks every read starts
// with, and the lease and writer that repair works under. The tools never
// import the facade.
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
	// LockLease takes, without waiting, existing session id's lease lock
	// alone (making its lock file if it is missing), as retirement does:
	// no lease record is written and no generation taken. held reports a
	// live holder. Under the lock nobody else writes the session.
	LockLease(id session.SessionID) (unlock func(), held bool, err error)
	// MarkCatalog makes session id's catalog mark for generation gen, as
	// a holder does before it changes the log.
	MarkCatalog(id session.SessionID, gen uint64)
}

// Lease is a lease TakeLease took, until OpenWriter's writer owns it.
type Lease interface {
	Release(ctx context.Context) error
}

// Writer is the writer of a session whose lease the tools hold: the
// contract's, and what it knows of the session's blobs.
type Writer interface {
	sessionstore.Writer
	// ForgetBlob drops what the writer knows of the blob of hash, which
	// a blob collection removed (blobfile.Writer.Forget).
	ForgetBlob(hash string)
}

// Store is one store as the offline tools see it: its root, and the
// facade (Host) for what only the facade may do. It is cheap: the facade
// makes one for each call.
type Store struct {
	root *layout.Root
	host Host
}

// New returns the offline tools of the store at root, whose facade is
// host.
func New(root *layout.Root, host Host) *Store {
	return &Store{root: root, host: host}
}

// read runs fn on fresh views of session id's log (logfile.Read), once
// the store is open, ctx is not done and id is valid.
func (s *Store) read(ctx context.Context, id session.SessionID, fn func(v *logfile.View) error) error {
	if err := s.host.Check(ctx, id); err != nil {
		return err
	}
	return logfile.Read(ctx, s.root, id, fn)
}

// checkSession is Check, then Exists: the store is open, ctx is not done,
// id is valid and its session is there.
func (s *Store) checkSession(ctx context.Context, id session.SessionID) error {
	if err := s.host.Check(ctx, id); err != nil {
		return err
	}
	return s.root.Exists(id)
}
