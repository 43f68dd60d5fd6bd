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
func (s State) String() string { return enumString(stateNames, "State", s) }

// MarshalText encodes s as its String form, for JSON output of tools.
func (s State) MarshalText() ([]byte, error) { return enumText(stateNames, "State", s) }

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
func (p PrevState) String() string { return enumString(prevStateNames, "PrevState", p) }

// MarshalText encodes p as its String form.
func (p PrevState) MarshalText() ([]byte, error) { return enumText(prevStateNames, "PrevState", p) }

// enumString is the String of v, a value of the enumeration typ whose
// names are names: its name, or typ(v) for a value without one.
func enumString[T ~int](names map[T]string, typ string, v T) string {
	if n, ok := names[v]; ok {
		return n
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// enumText is the MarshalText of v (see enumString): its name, or an error
// for a value without one.
func enumText[T ~int](names map[T]string, typ string, v T) ([]byte, error) {
	n, ok := names[v]
	if !ok {
		return nil, fmt.Errorf("fslease: invalid %s %d", typ, int(v))
	}
	return []byte(n), nil
}
