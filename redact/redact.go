package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// ErrUnknownRule is returned by New for an Options.Disable entry that names
// no rule.
var ErrUnknownRule = errors.New("redact: unknown rule")

// Options say which rules redact. The zero value redacts with the
// high-confidence rules (Rules lists them).
type Options struct {
	// Off turns redaction off: content is written as it comes.
	Off bool
	// Generic adds the generic rules: assignments to password=, secret:,
	// token= and the like, and high-entropy strings. They find more and
	// mistake more (a random identifier, a base64 image) for a secret.
	Generic bool
	// Disable names rules to leave out (Rules lists their IDs).
	Disable []string
}

// Rule describes one rule.
type Rule struct {
	// ID names the rule in placeholders and reports.
	ID string
	// Generic rules are off unless Options.Generic.
	Generic bool
}

// Rules lists every rule, the high-confidence ones first.
func Rules() []Rule {
	all := rules()
	out := make([]Rule, len(all))
	for i, r := range all {
		out[i] = Rule{ID: r.id, Generic: r.generic}
	}
	return out
}

// Finding is one secret in a string: its rule, its byte range and the
// short hash its placeholder shows.
type Finding struct {
	Rule       string
	Start, End int
	Hash       string
}

// Redactor finds and replaces secrets with the rules its Options chose.
// It holds no state of its own across calls and is safe for concurrent
// use. A nil *Redactor redacts nothing.
type Redactor struct {
	off bool
	set func() *ruleSet // the rules, built on first use
}

// ruleSet is the rules a Redactor runs and their prefilter.
type ruleSet struct {
	rules  []*rule
	pre    prefilter
	always []int // rules without keywords, run over every string
}

// New returns the Redactor of opts (one that redacts nothing when
// opts.Off). Errors: ErrUnknownRule.
func New(opts Options) (*Redactor, error) {
	if opts.Off {
		return &Redactor{off: true}, nil
	}
	all := rules()
	for _, id := range opts.Disable {
		if !slices.ContainsFunc(all, func(r rule) bool { return r.id == id }) {
			return nil, fmt.Errorf("%w: %q", ErrUnknownRule, id)
		}
	}
	rs := newRuleSet(opts)
	return &Redactor{off: len(rs.rules) == 0, set: func() *ruleSet { return rs }}, nil
}

func newRuleSet(opts Options) *ruleSet {
	all := rules()
	rs := &ruleSet{}
	for i := range all {
		ru := &all[i]
		if ru.generic && !opts.Generic || slices.Contains(opts.Disable, ru.id) {
			continue
		}
		if len(ru.keywords) == 0 || slices.ContainsFunc(ru.keywords, func(kw string) bool { return len(kw) < gram }) {
			rs.always = append(rs.always, len(rs.rules))
		}
		rs.rules = append(rs.rules, ru)
	}
	rs.pre = newPrefilter(rs.rules)
	return rs
}

// Default returns the Redactor of the zero Options: the high-confidence
// rules, what a store redacts with unless told otherwise. Its rules are
// compiled when it first looks at a string, not when it is made: every
// store is opened with it, and a program that only reads never compiles
// them.
func Default() *Redactor { return defaultRedactor }

var defaultRedactor = &Redactor{set: sync.OnceValue(func() *ruleSet { return newRuleSet(Options{}) })}

// Off reports whether r redacts nothing.
func (r *Redactor) Off() bool { return r == nil || r.off }

// Placeholder is what replaces secret, found by rule: the rule and the
// first 8 hex digits of the secret's SHA-256, so that two mentions of one
// secret stay recognisable and nothing of it is kept (FORMAT.md
// "Redaction").
func Placeholder(rule, secret string) string {
	return "[REDACTED:" + rule + ":" + shortHash(secret) + "]"
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// Find returns the secrets in s, in order, not overlapping.
func (r *Redactor) Find(s string) []Finding {
	if r.Off() || len(s) == 0 {
		return nil
	}
	var found []Finding
	rs := r.set()
	hits := rs.pre.scan(s)
	for i, ru := range rs.rules {
		var at []int
		if hits != nil {
			at = hits[i]
		}
		always := slices.Contains(rs.always, i)
		if len(at) == 0 && !always {
			continue
		}
		found = ru.find(s, at, always, found)
	}
	if len(found) < 2 {
		return found
	}
	slices.SortFunc(found, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	out := found[:1]
	for _, f := range found[1:] {
		if f.Start < out[len(out)-1].End {
			continue // overlaps one kept: the earlier, longer wins
		}
		out = append(out, f)
	}
	return out
}

// FindBytes is Find for a byte slice, without copying it: a Finding
// holds offsets and a hash, nothing of b.
func (r *Redactor) FindBytes(b []byte) []Finding {
	if len(b) == 0 {
		return nil
	}
	// The string shares b's memory only for the call, which keeps none
	// of it (Bytes).
	return r.Find(unsafe.String(&b[0], len(b))) //nolint:gosec // G103: read only, not kept (above)
}

// find appends the matches of ru in s around the keyword hits at (or in
// the whole of s when always). A rule whose matches begin with a keyword
// runs anchored at each hit, so that it fails at once where the keyword
// is not followed by a secret; the others run over windows around hits.
func (ru *rule) find(s string, at []int, always bool, found []Finding) []Finding {
	if ru.at != nil && !always {
		last := -1
		for _, p := range at {
			if p < last || ru.word && p > 0 && isWord(s[p-1]) || ru.near != nil && !ru.near(s, p) {
				continue // inside the previous match, or inside a word
			}
			end := min(len(s), p+ru.span+1)
			m := ru.at.FindStringSubmatchIndex(s[p:end])
			if m == nil || m[1] == end-p && end < len(s) {
				continue // none, or one the window cut
			}
			if f, ok := ru.finding(s, p, m); ok {
				found = append(found, f)
				last = p + m[1]
			}
		}
		return found
	}
	type window struct{ lo, hi int }
	var wins []window
	if always || ru.span < 0 {
		wins = []window{{0, len(s)}}
	} else {
		slices.Sort(at) // one rule's keywords are found in the order of their anchors
		for _, p := range at {
			w := window{max(0, p-ru.before-1), min(len(s), p+ru.span+1)}
			if n := len(wins); n > 0 && w.lo <= wins[n-1].hi {
				wins[n-1].hi = max(wins[n-1].hi, w.hi)
				continue
			}
			wins = append(wins, w)
		}
	}
	for _, w := range wins {
		sub := s[w.lo:w.hi]
		for _, m := range ru.re.FindAllStringSubmatchIndex(sub, -1) {
			// A match that touches a cut edge of the window may be part of
			// a longer string that is no secret of this rule.
			if m[0] == 0 && w.lo > 0 || m[1] == len(sub) && w.hi < len(s) {
				continue
			}
			if f, ok := ru.finding(s, w.lo, m); ok {
				found = append(found, f)
			}
		}
	}
	return found
}

// finding returns the secret of match m of ru in s[off:], when it is one.
func (ru *rule) finding(s string, off int, m []int) (Finding, bool) {
	a, b := m[2*ru.group], m[2*ru.group+1]
	if a < 0 {
		return Finding{}, false
	}
	secret := s[off+a : off+b]
	if ru.valid != nil && !ru.valid(secret) || ru.id != "private-key" && dummy(secret) {
		return Finding{}, false
	}
	return Finding{Rule: ru.id, Start: off + a, End: off + b, Hash: shortHash(secret)}, true
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// dummy reports a secret that documentation or a template shows: one
// with EXAMPLE in it (AKIAIOSFODNN7EXAMPLE), or a run of eight of one
// character (ghp_xxxxxxxx…, sk_test_00000000…). A random key holds such
// a run with a probability below one in 10^11.
func dummy(secret string) bool {
	if strings.Contains(secret, "EXAMPLE") || strings.Contains(secret, "example") {
		return true
	}
	run := 1
	for i := 1; i < len(secret); i++ {
		if secret[i] != secret[i-1] {
			run = 1
			continue
		}
		if run++; run >= 8 {
			return true
		}
	}
	return false
}

// String returns s with its secrets replaced by their placeholders, and
// how many it replaced (s itself when none).
func (r *Redactor) String(s string) (string, int) {
	found := r.Find(s)
	if len(found) == 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, f := range found {
		b.WriteString(s[last:f.Start])
		b.WriteString("[REDACTED:" + f.Rule + ":" + f.Hash + "]")
		last = f.End
	}
	b.WriteString(s[last:])
	return b.String(), len(found)
}

// Bytes is String for a byte slice: b itself when it holds no secret, else
// a new slice.
func (r *Redactor) Bytes(b []byte) ([]byte, int) {
	if r == nil || len(b) == 0 {
		return b, 0
	}
	// The string shares b's memory only for the call, which neither keeps
	// it nor changes b: what is kept is a new string.
	s, n := r.String(unsafe.String(&b[0], len(b))) //nolint:gosec // G103: read only, not kept (above)
	if n == 0 {
		return b, 0
	}
	return []byte(s), n
}
