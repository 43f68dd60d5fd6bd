package maintenance

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// RetireOptions chooses the sessions a retirement moves into the retired
// area. At least one of IDs, OlderThan, Labels and Policy must be given: a
// retirement never takes every session by default.
type RetireOptions struct {
	// IDs, when given, are the only sessions considered.
	IDs []session.SessionID
	// OlderThan retires only sessions idle at least this long: their
	// latest revision, and their latest restore, are older.
	OlderThan time.Duration
	// Labels retires only sessions that carry every one of these labels.
	Labels map[string]string
	// Policy applies the store's policy file (FORMAT.md) instead of
	// OlderThan and Labels.
	Policy bool
	// DryRun reports what would be retired and changes nothing.
	DryRun bool
}

// RetirePolicy is a parsed policy file: a session is retired when one of
// Rules matches it and it carries none of Keep's labels.
type RetirePolicy struct {
	Rules []RetireRule
	Keep  map[string]string
}

// RetireRule is one rule of a RetirePolicy: sessions carrying every one of
// Labels, idle at least OlderThan.
type RetireRule struct {
	OlderThan time.Duration
	Labels    map[string]string
}

// Match returns the number (from 1) of the first rule that retires a
// session with these labels, idle for idle, or 0.
func (p RetirePolicy) Match(labels map[string]string, idle time.Duration) int {
	for k, v := range p.Keep {
		if got, ok := labels[k]; ok && got == v {
			return 0
		}
	}
	for i, r := range p.Rules {
		if idle >= r.OlderThan && HasLabels(labels, r.Labels) {
			return i + 1
		}
	}
	return 0
}

// HasLabels reports whether labels carries every one of want.
func HasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// RetiredSession is a session in the retired area, or one a retirement
// moved (or, in a dry run, would move) there.
type RetiredSession struct {
	ID session.SessionID `json:"id"`
	// Summary is the session's summary when it was retired.
	Summary summary.Summary `json:"summary"`
	// RetiredAt is when it was retired (zero in a dry run).
	RetiredAt time.Time `json:"retired_at,omitzero"`
	// Bytes is the size of its files; PackBytes the size of its pack in
	// the retired area (zero in a dry run).
	Bytes     int64 `json:"bytes"`
	PackBytes int64 `json:"pack_bytes,omitempty"`
	// Reason is why a retirement chose it: "named", "older than D",
	// "policy rule N".
	Reason string `json:"reason,omitempty"`
	// AlsoLive marks a retired session that is live too: a retire or a
	// restore stopped between its two steps. The live copy is the
	// session; the next retire or restore of it finishes the work.
	AlsoLive bool `json:"also_live,omitempty"`
}

// RetireSkip is a session a retirement considered and left live.
type RetireSkip struct {
	ID     session.SessionID `json:"id"`
	Reason string            `json:"reason"`
}

// RetireReport is what a retirement did (or, DryRun, would do).
type RetireReport struct {
	DryRun  bool             `json:"dry_run,omitempty"`
	Retired []RetiredSession `json:"retired"`
	// Skipped are the sessions it chose but left live: held by a live
	// holder, changed while it was packed, or failed (the reason says).
	Skipped []RetireSkip `json:"skipped,omitempty"`
	// Bytes and PackBytes sum the retired sessions'.
	Bytes     int64 `json:"bytes"`
	PackBytes int64 `json:"pack_bytes"`
	// Unreadable are the sessions the listing could not read.
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
}

// RestoreReport is what a restore did.
type RestoreReport struct {
	Restored []RetiredSession `json:"restored"`
}

// ParseAge parses an age as the retirement options and the policy file
// write it: a Go duration ("36h", "90m") or a whole number of days ("90d")
// or weeks ("2w"). It must be positive.
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, ok = wholeUnits(n, 24*time.Hour)
		if !ok {
			return 0, fmt.Errorf("age %q: not a whole number of days", s)
		}
	} else if n, ok := strings.CutSuffix(s, "w"); ok {
		d, ok = wholeUnits(n, 7*24*time.Hour)
		if !ok {
			return 0, fmt.Errorf("age %q: not a whole number of weeks", s)
		}
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("age %q: a duration such as 36h, or days (90d) or weeks (2w)", s)
		}
	}
	if d <= 0 {
		return 0, errors.New("age " + strconv.Quote(s) + ": must be positive")
	}
	return d, nil
}

func wholeUnits(n string, unit time.Duration) (time.Duration, bool) {
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil || v <= 0 || v > int64(1<<63-1)/int64(unit) || strings.HasPrefix(n, "+") {
		return 0, false
	}
	return time.Duration(v) * unit, true
}
