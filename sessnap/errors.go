package sessnap

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them (or a
// session package sentinel for domain rule violations), so callers classify
// with errors.Is.
var (
	// ErrNilSession is returned by Of when given a nil session.
	ErrNilSession = errors.New("sessnap: nil session")

	// ErrMalformed reports bytes that are not a snapshot: invalid JSON,
	// invalid UTF-8, or a value of the wrong JSON type for its key.
	ErrMalformed = errors.New("sessnap: malformed snapshot")

	// ErrUnsupportedFormat reports a format tag this codec does not know
	// (written by an incompatible future codec).
	ErrUnsupportedFormat = errors.New("sessnap: unsupported snapshot format")

	// ErrInvalid reports a snapshot that decodes but cannot be restored:
	// a missing id or created_at, a state/field combination the lifecycle
	// forbids, an unknown enumeration value.
	ErrInvalid = errors.New("sessnap: invalid snapshot")

	// ErrUnknownState reports a state outside the lifecycle vocabulary.
	ErrUnknownState = errors.New("sessnap: unknown state")

	// ErrInvalidAuthority reports a present authority that is not in its
	// canonical, valid representation.
	ErrInvalidAuthority = errors.New("sessnap: invalid authority")

	// ErrInvalidEnvironmentRef reports a missing or incomplete environment
	// reference.
	ErrInvalidEnvironmentRef = errors.New("sessnap: invalid environment_ref")

	// ErrUnencodable reports a value that cannot be encoded so that every
	// JSON reader reads it back exactly: an integer beyond ±(2^53−1), a
	// string that is not valid UTF-8, a time that is not UTC, raw JSON that
	// is not valid.
	ErrUnencodable = errors.New("sessnap: value cannot be encoded exactly")
)
