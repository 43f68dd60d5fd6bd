package maintenance

import "errors"

// Sentinel errors of a directory store, returned by the rooms that do its
// work; package jsonlstore exports each under the same name (the same
// value, so errors.Is holds either way) and says there when it is
// returned.
var (
	// ErrNoStore reports a store root that does not exist or is not a
	// directory.
	ErrNoStore = errors.New("jsonlstore: no store")
	// ErrUnsafeRoot reports a store root another local user could change.
	ErrUnsafeRoot = errors.New("jsonlstore: unsafe store root")
	// ErrNoLog reports a session directory without a usable log.
	ErrNoLog = errors.New("jsonlstore: no usable log")
	// ErrLinkedLog reports a log with more than one hard link, never
	// written to.
	ErrLinkedLog = errors.New("jsonlstore: log has more than one hard link")
	// ErrBackupInsideStore reports a backup destination inside the store.
	ErrBackupInsideStore = errors.New("jsonlstore: backup destination inside the store")
	// ErrBlob reports a blob missing, damaged or of the wrong content.
	ErrBlob = errors.New("jsonlstore: blob missing or damaged")

	// ErrRetireHeld reports a session whose lease a live holder has: it
	// is never retired.
	ErrRetireHeld = errors.New("jsonlstore: session is held")
	// ErrRetireBusy reports a retired area that another retire or restore
	// is changing.
	ErrRetireBusy = errors.New("jsonlstore: another retire or restore is running")
	// ErrNotRetired reports a session that has no pack in the retired
	// area.
	ErrNotRetired = errors.New("jsonlstore: session is not retired")
	// ErrRetireConflict reports a session that is both live and retired
	// with different histories.
	ErrRetireConflict = errors.New("jsonlstore: session is live and retired with different logs")
	// ErrRetiredCorrupt reports a pack or a journal line that is not as
	// FORMAT.md says.
	ErrRetiredCorrupt = errors.New("jsonlstore: retired area damaged")
	// ErrRetirePolicy reports a retention policy file that does not parse.
	ErrRetirePolicy = errors.New("jsonlstore: invalid retention policy")
	// ErrRetireCriteria reports a retirement that names no sessions: no
	// IDs, age, labels or policy.
	ErrRetireCriteria = errors.New("jsonlstore: say which sessions to retire: IDs, an age, labels or the policy")
)
