package offline

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/session"
)

// Host is the store as the offline tools need it from the facade
// (package jsonlstore), which implements it: the checks every read starts
// with, and what a backup or sync does under a session's lease. The tools
// never import the facade.
type Host interface {
	// Store is the store itself: a backup or sync takes leases and reads
	// histories through it.
	sessionstore.Store
	// Check returns what stops any read of session id before it starts:
	// sessionstore.ErrClosed, ctx's error, an invalid ID.
	Check(ctx context.Context, id session.SessionID) error
	// CheckWritable runs under a lease just taken, before anything is
	// written: session id's directory holds no symlink and its log is one
	// a holder may write to.
	CheckWritable(id session.SessionID) error
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

// VerifySession is Verify's check of session id (package verify).
func (s *Store) VerifySession(ctx context.Context, id session.SessionID, deep bool) (sessionstore.SessionVerifyReport, error) {
	return verify.New(s.root, s.host.Check).Session(ctx, id, deep)
}
