package fslease

import "fmt"

// State is the condition of a lease as seen by Inspect.
type State int

const (
	// Free means nobody holds the lock and the last holder, if any,
	// released cleanly.
	Free State = iota + 1
	// Held means a live process holds the lock (it may be stopped: the
	// lock, not the heartbeat, decides).
	Held
	// Stale means nobody holds the lock but the last holder did not
	// release cleanly (it died, or this is a copy of a held directory), or
	// lease.json is unreadable.
	Stale
)

var stateNames = map[State]string{Free: "free", Held: "held", Stale: "stale"}

// String returns "free", "held" or "stale".
func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText encodes s as its String form, for JSON output of tools.
func (s State) MarshalText() ([]byte, error) {
	if _, ok := stateNames[s]; !ok {
		return nil, fmt.Errorf("fslease: invalid State %d", int(s))
	}
	return []byte(s.String()), nil
}

// PrevState says what Acquire found in lease.json before it wrote its own
// record.
type PrevState int

const (
	// PrevNone means there was no lease.json: first acquisition.
	PrevNone PrevState = iota + 1
	// PrevReleased means the previous holder released cleanly.
	PrevReleased
	// PrevStale means the previous holder did not release: it died, or the
	// directory was copied or restored while held.
	PrevStale
	// PrevUnreadable means lease.json was empty, damaged, too large or
	// from a newer version. Acquire recovered by overwriting it; see
	// Lease.PreviousErr for why it was unreadable.
	PrevUnreadable
)

var prevStateNames = map[PrevState]string{
	PrevNone: "none", PrevReleased: "released", PrevStale: "stale", PrevUnreadable: "unreadable",
}

// String returns "none", "released", "stale" or "unreadable".
func (p PrevState) String() string {
	if n, ok := prevStateNames[p]; ok {
		return n
	}
	return fmt.Sprintf("PrevState(%d)", int(p))
}

// MarshalText encodes p as its String form.
func (p PrevState) MarshalText() ([]byte, error) {
	if _, ok := prevStateNames[p]; !ok {
		return nil, fmt.Errorf("fslease: invalid PrevState %d", int(p))
	}
	return []byte(p.String()), nil
}
