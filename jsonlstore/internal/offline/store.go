package offline

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/toolhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/session"
)

// Host is the store as the offline tools need it from the facade
// (package jsonlstore), which implements it: toolhost.Host, and what a
// backup or sync does under a session's lease. The tools never import the
// facade.
type Host interface {
	toolhost.Host
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
