package toolhost

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// Host is the store as every offline room needs it from the facade,
// which implements it: the store itself, the checks every read starts
// with, and the forensic copies and lease status a room works with.
type Host interface {
	// Store is the store itself: a backup or sync takes leases and reads
	// histories through it; Repair waits for a lease with
	// sessionstore.AcquireWithin, which calls its Lease (and Acquire and
	// TryAcquire, which Repair replaces when it cuts or salvages).
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
}
