package session

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of them,
// so callers classify with errors.Is.
var (
	// ErrIllegalTransition is wrapped by *TransitionError when an event is
	// not allowed from the session's current state.
	ErrIllegalTransition = errors.New("session: illegal transition")

	// ErrInvalid reports a value outside its documented domain: an unknown
	// enumeration value, a malformed message, an incomplete environment
	// reference, a negative counter.
	ErrInvalid = errors.New("session: invalid value")

	// ErrImmutable reports an attempt to change a write-once label (the
	// owner) or a behavior fixed at creation.
	ErrImmutable = errors.New("session: immutable value")

	// ErrNoPendingAsk is returned by PendingAsk when the session is not
	// awaiting approval.
	ErrNoPendingAsk = errors.New("session: no pending ask")
)

// TransitionError reports an event the transition table rejects. The
// session is unchanged when it is returned.
type TransitionError struct {
	Event Event
	From  State
}

func (e *TransitionError) Error() string {
	if e.From.Terminal() {
		return fmt.Sprintf("session: illegal transition: %s from terminal state %s", e.Event, e.From)
	}
	return fmt.Sprintf("session: illegal transition: %s from state %s", e.Event, e.From)
}

// Unwrap returns ErrIllegalTransition.
func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
