package session

// This file is the lifecycle state machine: the one table of legal
// transitions and the single function that applies it. Every state change
// of a Session goes through apply; nothing else assigns Session.state.
//
//	            begin_turn            pause
//	   idle ─────────────▶ running ─────────▶ awaiting
//	     ▲  ◀───────────── │  ▲ ◀─────────────── │
//	     │     end_turn     │  └──── resume ─────┘
//	     │                  │
//	     └─ complete ───────┴─ complete ──▶ completed
//	idle, running, awaiting ── stop ──▶ stopped
//	idle, running, awaiting ── cancel ─▶ cancelled
//	idle, running, awaiting ── fail ───▶ failed
//
// Terminal states (completed, stopped, cancelled, failed) accept no event.

// Event is an input to the lifecycle state machine.
type Event string

// Lifecycle events.
const (
	EventBeginTurn Event = "begin_turn"
	EventEndTurn   Event = "end_turn"
	EventPause     Event = "pause"
	EventResume    Event = "resume"
	EventComplete  Event = "complete"
	EventStop      Event = "stop"
	EventCancel    Event = "cancel"
	EventFail      Event = "fail"
)

type transition struct {
	event Event
	from  []State
	to    State
}

// transitions is the whole lifecycle. A (state, event) pair that is not
// listed is illegal.
var transitions = []transition{
	{EventBeginTurn, []State{StateIdle}, StateRunning},
	{EventEndTurn, []State{StateRunning}, StateIdle},
	{EventPause, []State{StateRunning}, StateAwaiting},
	{EventResume, []State{StateAwaiting}, StateRunning},
	{EventComplete, []State{StateIdle, StateRunning}, StateCompleted},
	{EventStop, []State{StateIdle, StateRunning, StateAwaiting}, StateStopped},
	{EventCancel, []State{StateIdle, StateRunning, StateAwaiting}, StateCancelled},
	{EventFail, []State{StateIdle, StateRunning, StateAwaiting}, StateFailed},
}

// Next returns the state that event leads to from state, or a
// *TransitionError if the table has no such transition.
func Next(from State, event Event) (State, error) {
	for _, t := range transitions {
		if t.event != event {
			continue
		}
		for _, f := range t.from {
			if f == from {
				return t.to, nil
			}
		}
	}
	return from, &TransitionError{Event: event, From: from}
}

// apply moves s along event. It checks the table before changing
// anything; effect runs only when the transition is legal, and must itself
// not fail (validate arguments before calling apply).
func (s *Session) apply(event Event, effect func()) error {
	to, err := Next(s.state, event)
	if err != nil {
		return err
	}
	s.state = to
	if effect != nil {
		effect()
	}
	return nil
}
