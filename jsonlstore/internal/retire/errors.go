package retire

import (
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// Sentinel errors of the retired area. Those a caller classifies are
// package maintenance's (jsonlstore exports each under its name there).
var (
	// ErrHeld: a session whose lease a live holder has is never retired.
	ErrHeld = maintenance.ErrRetireHeld
	// ErrBusy: another retire or restore is working on the area (its lock
	// is taken).
	ErrBusy = maintenance.ErrRetireBusy
	// ErrNotRetired: a session that has no pack in the retired area.
	ErrNotRetired = maintenance.ErrNotRetired
	// ErrConflict: a session that is both live and retired with logs that
	// are not one history (the live log does not begin with the retired
	// one): neither copy is touched.
	ErrConflict = maintenance.ErrRetireConflict
	// ErrChanged reports a session file that changed while it was packed.
	ErrChanged = errors.New("jsonlstore: session changed while it was retired")
	// ErrUnpackable reports a session directory that holds something
	// other than regular files and directories.
	ErrUnpackable = errors.New("jsonlstore: session holds something that is not a regular file or directory")
	// ErrCorrupt: a pack or a journal line that is not as FORMAT.md says
	// (CorruptError carries where).
	ErrCorrupt = maintenance.ErrRetiredCorrupt
	// ErrPolicy: a retention policy file that does not parse (PolicyError
	// carries where).
	ErrPolicy = maintenance.ErrRetirePolicy
	// ErrCriteria: a retirement that names no sessions.
	ErrCriteria = maintenance.ErrRetireCriteria
)

// CorruptError is a damaged pack or journal: which file, and what is
// wrong.
type CorruptError struct {
	File string // relative to the store root
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrCorrupt, e.File, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// PolicyError is a policy file that was refused: the file, the place in
// it (a rule's number from 1, or a key), and why.
type PolicyError struct {
	File  string
	Where string
	Err   error
}

func (e *PolicyError) Error() string {
	if e.Where == "" {
		return fmt.Sprintf("%v %s: %v", ErrPolicy, e.File, e.Err)
	}
	return fmt.Sprintf("%v %s: %s: %v", ErrPolicy, e.File, e.Where, e.Err)
}

// Unwrap returns ErrPolicy and the cause.
func (e *PolicyError) Unwrap() []error { return []error{ErrPolicy, e.Err} }
