package sessnap

import (
	"fmt"

	"github.com/sessionstore/sessionstore/session"
)

// RestoreState drives a freshly-constructed (StateIdle) Session through the
// state machine to the target lifecycle state, seeding the running totals
// (counters) and cumulative usage. It is the single place the
// terminal/awaiting transition vocabulary of rehydration lives: anything
// that rebuilds sessions (Snapshot.Restore, an event fold) calls it rather
// than replaying transitions itself.
//
// s must be a fresh StateIdle session (straight from session.New) with its
// conversation already seeded; RestoreState only advances the lifecycle.
// stop is the recorded terminal stop reason: it must be empty for a
// non-terminal state, a Stop reason (user_stop or a limit) for stopped, and
// empty or the state's own reason for completed ("completed"), cancelled
// ("cancelled") and failed ("error"). pending is the parked ask, required
// for StateAwaiting and refused otherwise. counters seed the running totals
// (preserved across the BeginTurn that running/awaiting restore performs);
// usage seeds the cumulative budget figure. permanent and lastError record
// the permanence flag and failure cause of StateFailed and are refused on
// any other state (a value that would be silently dropped is an error).
//
// It returns an error wrapping ErrUnknownState for an unknown state,
// ErrInvalid for a combination the lifecycle forbids, or the aggregate's
// own error for a transition it rejects.
func RestoreState(
	s *session.Session,
	state session.State,
	stop session.StopReason,
	pending *session.PendingAsk,
	counters session.Counters,
	usage session.Usage,
	permanent bool,
	lastError string,
) error {
	if s == nil {
		return ErrNilSession
	}
	if s.State() != session.StateIdle || s.Counters() != (session.Counters{}) {
		return fmt.Errorf("%w: RestoreState needs a fresh idle session, got state %s", ErrInvalid, s.State())
	}
	if !state.Valid() {
		return fmt.Errorf("%w: %q", ErrUnknownState, state)
	}
	if state == session.StateAwaiting && pending == nil {
		return fmt.Errorf("%w: state awaiting without a pending ask", ErrInvalid)
	}
	if state != session.StateAwaiting && pending != nil {
		return fmt.Errorf("%w: pending ask on state %s", ErrInvalid, state)
	}
	if !state.Terminal() && stop != "" {
		return fmt.Errorf("%w: stop_reason %q on non-terminal state %s", ErrInvalid, stop, state)
	}
	if state != session.StateFailed && (permanent || lastError != "") {
		return fmt.Errorf("%w: permanent/last_error on non-failed state %s", ErrInvalid, state)
	}
	if stop != "" && !stop.Valid() {
		return fmt.Errorf("%w: unknown stop_reason %q", ErrInvalid, stop)
	}
	own := func(want session.StopReason) error {
		if stop != "" && stop != want {
			return fmt.Errorf("%w: stop_reason %q on state %s (want %q)", ErrInvalid, stop, state, want)
		}
		return nil
	}

	var err error
	switch state {
	case session.StateIdle:
	case session.StateRunning:
		err = s.BeginTurn()
	case session.StateAwaiting:
		if err = s.BeginTurn(); err == nil {
			err = s.PauseForApproval(*pending)
		}
	case session.StateCompleted:
		if err = own(session.StopCompleted); err == nil {
			err = s.Complete()
		}
	case session.StateStopped:
		if stop == "" {
			return fmt.Errorf("%w: state stopped without stop_reason", ErrInvalid)
		}
		err = s.Stop(stop)
	case session.StateCancelled:
		if err = own(session.StopCancelled); err == nil {
			err = s.Cancel()
		}
	case session.StateFailed:
		if err = own(session.StopError); err == nil {
			err = s.Fail(lastError)
		}
		if err == nil {
			err = s.RecordFailurePermanence(permanent)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: restore state %s: %w", ErrInvalid, state, err)
	}
	if err := s.RestoreTotals(counters, usage); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// ValidatePersistedAuthority rejects an authority claim that cannot
// represent a usable derived capability set: it must be present, non-empty,
// strictly sorted (no duplicates) and drawn from session.Capabilities.
// Callers must distinguish a nil authority pointer caused by a genuinely
// absent legacy field before calling it; a nil pointer here is an error.
func ValidatePersistedAuthority(a *session.Authority) error {
	if a == nil {
		return fmt.Errorf("%w: nil authority", ErrInvalidAuthority)
	}
	if err := session.ValidateAuthority(*a); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAuthority, err)
	}
	return nil
}
