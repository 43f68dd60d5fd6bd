package fslease

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is; the errors returned by this
// package wrap them with the directory and the detail.
var (
	// ErrHeld means another owner (another process, or another Lease in this
	// process) holds the lease. TryAcquire returns it inside a *HeldError that
	// carries the holder's record.
	ErrHeld = errors.New("fslease: lease held by another owner")

	// ErrLost means this Lease no longer owns the lease: it was released, the
	// lock file was replaced or removed, or lease.json now names another
	// generation or owner. It is returned inside a *LostError.
	ErrLost = errors.New("fslease: lease lost")

	// ErrReleased is wrapped (together with ErrLost) by Check, Heartbeat and
	// friends after Release.
	ErrReleased = errors.New("fslease: lease released")

	// ErrOverflow means the next generation would exceed MaxGeneration. The
	// lease cannot be acquired until a person repairs lease.json or the
	// caller's minimum.
	ErrOverflow = errors.New("fslease: generation overflow")

	// ErrSymlink means lease.lock or lease.json is a symbolic link. It is
	// refused rather than followed, and nothing is written through it.
	ErrSymlink = errors.New("fslease: refusing symbolic link")

	// ErrNotRegular means lease.lock or lease.json exists but is not a
	// regular file (a directory, a FIFO, a device).
	ErrNotRegular = errors.New("fslease: not a regular file")

	// ErrCorruptRecord means lease.json could not be parsed as a lease record
	// (empty, truncated, garbage, too large, or invalid values). Acquire
	// recovers from it (PrevUnreadable); Inspect reports it in
	// Status.RecordErr.
	ErrCorruptRecord = errors.New("fslease: corrupt lease record")

	// ErrFutureVersion means lease.json was written by a newer version of
	// this package. Acquire treats it like an unreadable record but keeps
	// its generation as a floor when one can be read.
	ErrFutureVersion = errors.New("fslease: lease record from a newer version")

	// ErrInvalidOptions means the Options passed to Acquire or TryAcquire are
	// invalid.
	ErrInvalidOptions = errors.New("fslease: invalid options")
)

// HeldError is returned by TryAcquire when another owner holds the lease.
// errors.Is(err, ErrHeld) is true for it.
type HeldError struct {
	// Dir is the lease directory.
	Dir string
	// Holder is the record found in lease.json, or nil if it was missing or
	// unreadable. It is read without the lock, so in the moment between a
	// new holder's flock and its write it may still be the previous
	// owner's record.
	Holder *Record
}

// Error names the directory and the holder.
func (e *HeldError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("%v: %s (lease record unreadable)", ErrHeld, e.Dir)
	}
	o := e.Holder.Owner
	return fmt.Sprintf("%v: %s: generation %d, pid %d on %q, label %q, heartbeat %s",
		ErrHeld, e.Dir, e.Holder.Generation, o.PID, o.Host, o.Label,
		e.Holder.HeartbeatAt.Format("2006-01-02T15:04:05.000Z07:00"))
}

// Unwrap returns ErrHeld.
func (e *HeldError) Unwrap() error { return ErrHeld }

// LostError is returned by Check, Heartbeat and Release when the Lease no
// longer owns the lease. errors.Is(err, ErrLost) is true for it, and so is
// errors.Is(err, e.Err).
type LostError struct {
	// Dir is the lease directory.
	Dir string
	// Generation is the generation this Lease acquired.
	Generation uint64
	// Reason says what the fencing check found, for people.
	Reason string
	// Err is the underlying cause, or nil.
	Err error
}

// Error names the directory, the generation and what the check found.
func (e *LostError) Error() string {
	msg := fmt.Sprintf("%v: %s generation %d: %s", ErrLost, e.Dir, e.Generation, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrLost and the underlying cause.
func (e *LostError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLost}
	}
	return []error{ErrLost, e.Err}
}
