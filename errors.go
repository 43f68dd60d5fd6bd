package sessionstore

import (
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Sentinel errors of the store contract. Adapters wrap them with the
// session ID and, where there is one, the path; callers classify with
// errors.Is.
var (
	// ErrNotFound reports an unknown session ID or revision.
	ErrNotFound = errors.New("sessionstore: not found")

	// ErrExists reports a Create or Fork of an ID that already exists.
	ErrExists = errors.New("sessionstore: session already exists")

	// ErrConflict reports an Append whose expected revision is not the
	// latest (a stale view): nothing was written.
	ErrConflict = errors.New("sessionstore: conflict: stale expected revision")

	// ErrLeaseHeld reports a TryAcquire of a lease another holder has. The
	// error is a *LeaseHeldError that says who.
	ErrLeaseHeld = errors.New("sessionstore: lease held")

	// ErrLeaseLost reports a writer whose lease was superseded (or expired,
	// for adapters whose leases expire): it wrote nothing and must stop.
	ErrLeaseLost = errors.New("sessionstore: lease lost")

	// ErrWriterFailed reports a writer poisoned by an earlier I/O error.
	// Every call after the failing one returns it; the next holder recovers.
	ErrWriterFailed = errors.New("sessionstore: writer failed")

	// ErrSchemaTooNew reports a session written by a newer program: its
	// latest record has a higher sessnap schema version, or a record has a
	// record format version or kind this program does not know (then the
	// error is a *NewerRecordError that says where). This program reads
	// what it can and refuses to append, so it never drops or overwrites
	// what a newer program wrote.
	ErrSchemaTooNew = errors.New("sessionstore: session written by a newer version")

	// ErrRevisionsMissing reports revisions that a repair set aside
	// because their records were damaged (a *GapError says which). The
	// revisions before and after them read as before.
	ErrRevisionsMissing = errors.New("sessionstore: revisions missing (set aside by a repair)")

	// ErrInvalidID reports a session ID that is not safe as a directory
	// name (see ValidateID).
	ErrInvalidID = errors.New("sessionstore: invalid session id")

	// ErrInvalidSnapshot reports a snapshot the store refuses to write:
	// one whose ID is not the session's, or that sessnap cannot encode or
	// restore.
	ErrInvalidSnapshot = errors.New("sessionstore: invalid snapshot")

	// ErrTooLarge reports a snapshot that does not fit the store's record
	// cap (DefaultMaxRecordBytes says what the cap bounds); nothing was
	// written.
	ErrTooLarge = errors.New("sessionstore: record too large")

	// ErrClosed reports use of a closed store, or of a writer after Release
	// or Delete.
	ErrClosed = errors.New("sessionstore: closed")

	// ErrCorrupt is wrapped by *CorruptionError.
	ErrCorrupt = errors.New("sessionstore: corrupt record")
)

// LeaseHeldError reports who holds a lease that TryAcquire could not take.
type LeaseHeldError struct {
	ID     session.SessionID
	Status summary.LeaseStatus
}

func (e *LeaseHeldError) Error() string {
	msg := fmt.Sprintf("sessionstore: lease held: session %s", e.ID)
	if h := e.Status.Holder; h != nil {
		msg += fmt.Sprintf(" by %s pid %d on %s (generation %d, heartbeat %s ago)",
			orDash(h.Label), h.PID, orDash(h.Host), e.Status.Generation, e.Status.HeartbeatAge.Round(1e6))
	}
	return msg
}

// Unwrap returns ErrLeaseHeld.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// OpError is the shape of an adapter's operational errors (an I/O error,
// a database error, a refusal) in the manner of fs.PathError: the
// operation, the session and the file it failed on, and why. Err keeps
// the cause, so errors.Is classifies it against the sentinels above and
// the standard library's (fs.ErrNotExist, syscall.ENOSPC); errors.As with
// *OpError says where. Errors that are already typed (*CorruptionError,
// *LeaseHeldError, *NewerRecordError, *GapError) stay as they are inside
// it.
type OpError struct {
	Store string            // the adapter: "jsonlstore", "pgstore"
	Op    string            // what failed: "create", "append", "compact", …
	ID    session.SessionID // the session; "" for the store as a whole
	Path  string            // the file, relative to the store's root; "" when none is at fault
	Err   error
}

// Error reads "STORE: OP ID (PATH): ERR", leaving out what is empty.
func (e *OpError) Error() string {
	msg := e.Store + ": " + e.Op
	if e.ID != "" {
		msg += " " + string(e.ID)
	}
	if e.Path != "" {
		msg += " (" + e.Path + ")"
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// CorruptionError reports a record that fails its checks (checksum,
// framing, sequence) at a known place. Nothing is removed automatically
// when it is returned.
type CorruptionError struct {
	ID     session.SessionID
	Path   string // file, relative to the store root where possible
	Offset int64  // byte offset of the bad record in Path
	// Revision is the revision the bad record claims or was expected to
	// have; 0 when unknown.
	Revision uint64
	Err      error // what check failed
}

func (e *CorruptionError) Error() string {
	msg := "sessionstore: corrupt record: " + recordPlace(e.ID, e.Path, e.Offset, e.Revision)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrCorrupt and the underlying cause.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// NewerRecordError reports a record written by a newer program: its line
// is whole and its checksum valid, but its record format version or kind is
// one this program does not know. It is never corruption and never an
// uncommitted tail: readers stop before it, recovery never cuts it, and
// writers refuse to append after it.
type NewerRecordError struct {
	ID       session.SessionID
	Path     string // file, relative to the store root where possible
	Offset   int64  // byte offset of the record in Path
	Revision uint64 // the revision it claims; 0 when unreadable
	Version  int    // its record format version
	Kind     string // its kind, when readable
}

func (e *NewerRecordError) Error() string {
	return "sessionstore: " + recordPlace(e.ID, e.Path, e.Offset, e.Revision) + fmt.Sprintf(" was written by a newer version (record format %d, kind %q); this program reads the revisions before it and does not write to the session", e.Version, e.Kind)
}

// Unwrap returns ErrSchemaTooNew.
func (e *NewerRecordError) Unwrap() error { return ErrSchemaTooNew }

// recordPlace says where a record is, as CorruptionError and
// NewerRecordError name it: "session ID: PATH at offset N (revision R)",
// without the revision when it is unknown (0).
func recordPlace(id session.SessionID, path string, offset int64, rev uint64) string {
	place := fmt.Sprintf("session %s: %s at offset %d", id, path, offset)
	if rev > 0 {
		place += fmt.Sprintf(" (revision %d)", rev)
	}
	return place
}

// GapError reports revisions First to Last that a repair set aside
// (FORMAT.md, "Repaired logs"): History yields it in their place and goes
// on, and LoadRevision returns it for any of them.
type GapError struct {
	ID          session.SessionID
	First, Last uint64
	// Reason says why they are missing; Forensic is the file that holds
	// their removed bytes, relative to the store root, when known.
	Reason   string
	Forensic string
}

func (e *GapError) Error() string {
	msg := fmt.Sprintf("sessionstore: session %s: revisions %d to %d are missing (set aside by a repair", e.ID, e.First, e.Last)
	if e.Forensic != "" {
		msg += " into " + e.Forensic
	}
	msg += ")"
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns ErrRevisionsMissing.
func (e *GapError) Unwrap() error { return ErrRevisionsMissing }
