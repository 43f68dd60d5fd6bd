package summary

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// ErrBadCursor reports a cursor that this index did not issue, or one
// issued for a different order or filter.
var ErrBadCursor = errors.New("summary: invalid cursor")

// Order is the order of a listing. Every order breaks ties by ID, so it is
// total and a keyset cursor can resume it exactly.
type Order string

// Orders.
const (
	OrderUpdatedDesc Order = "updated_desc" // most recently updated first (the default)
	OrderUpdatedAsc  Order = "updated_asc"
	OrderCreatedDesc Order = "created_desc"
	OrderCreatedAsc  Order = "created_asc"
	OrderIDAsc       Order = "id_asc"
)

// Valid reports whether o is a documented order (or empty, the default).
func (o Order) Valid() bool {
	switch o {
	case "", OrderUpdatedDesc, OrderUpdatedAsc, OrderCreatedDesc, OrderCreatedAsc, OrderIDAsc:
		return true
	}
	return false
}

// DefaultLimit and MaxLimit bound a page.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Query selects, orders and pages summaries. The zero Query lists the
// first DefaultLimit sessions, most recently updated first. Every filter
// that is set must match (they are ANDed).
type Query struct {
	States       []session.State       // any of these states (empty: all)
	Kinds        []session.SessionKind // any of these kinds (empty: all)
	ParentID     session.SessionID     // only children of this session
	UpdatedSince time.Time             // only sessions updated at or after
	// Labels selects sessions that carry every one of these labels with
	// exactly this value (an empty value matches a label set to "", not
	// any value). At most session.MaxLabels, each valid.
	Labels map[string]string
	// Project selects sessions whose workspace project is this directory.
	// Paths compare as text once trailing slashes are trimmed ("/src/app/"
	// is "/src/app"); nothing is resolved on a file system. With
	// ProjectTree it also selects sessions whose project lies below it
	// ("/src" selects "/src/app" but not "/srcs").
	Project     string
	ProjectTree bool
	Order       Order
	Limit       int    // 0 means DefaultLimit; above MaxLimit is clamped
	Cursor      string // from a previous Page.Next, with the same filter and order
}

// Page is one page of a listing.
type Page struct {
	Items []Summary `json:"items"`
	// Next resumes the listing after the last item; empty on the last page.
	// Paging with it returns every session not modified during the paging
	// exactly once.
	Next string `json:"next,omitempty"`
	// Unreadable lists, in ID order, the sessions that exist but that the
	// store could not read when it made the page (a damaged or missing
	// log, a file the caller may not read). They have no summary, so they
	// match no filter and have no place in any order: every page of a
	// listing repeats them, whatever its query. Empty when every session
	// reads.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// Unreadable is a session that exists but could not be read: the store
// cannot say what it holds, and reports it rather than leave it out.
type Unreadable struct {
	ID session.SessionID `json:"id"`
	// Reason says what is wrong, for people.
	Reason string `json:"reason"`
	// Err is the error reading the session met, for errors.Is and
	// errors.As (a *sessionstore.CorruptionError for damage, an error
	// matching fs.ErrPermission for a file the caller may not read); nil
	// when the value was decoded from JSON.
	Err error `json:"-"`
}

// UnreadableOf describes session id, which could not be read because of
// err.
func UnreadableOf(id session.SessionID, err error) Unreadable {
	return Unreadable{ID: id, Reason: err.Error(), Err: err}
}

// Normalize validates q and fills in defaults.
func (q Query) Normalize() (Query, error) {
	if !q.Order.Valid() {
		return q, fmt.Errorf("summary: unknown order %q", q.Order)
	}
	if q.Order == "" {
		q.Order = OrderUpdatedDesc
	}
	if q.Limit < 0 {
		return q, fmt.Errorf("summary: negative limit %d", q.Limit)
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	q.Limit = min(q.Limit, MaxLimit)
	for _, s := range q.States {
		if !s.Valid() {
			return q, fmt.Errorf("summary: unknown state %q (the states: %s)", s, joinNames(session.States))
		}
	}
	for _, k := range q.Kinds {
		if !k.Valid() {
			return q, fmt.Errorf("summary: unknown kind %q (the kinds: %s)", k, joinNames([]session.SessionKind{session.KindPrimary, session.KindSubagent, session.KindScheduled, session.KindDebug, session.KindUnknown}))
		}
	}
	if len(q.Labels) > session.MaxLabels {
		return q, fmt.Errorf("summary: %d labels in a query (at most %d)", len(q.Labels), session.MaxLabels)
	}
	for k, v := range q.Labels {
		if err := session.ValidateLabel(k, v); err != nil {
			return q, fmt.Errorf("summary: query label: %w", err)
		}
	}
	if q.ProjectTree && q.Project == "" {
		return q, fmt.Errorf("summary: ProjectTree without a Project")
	}
	if len(q.Project) > session.MaxPathBytes {
		return q, fmt.Errorf("summary: project of %d bytes (at most %d)", len(q.Project), session.MaxPathBytes)
	}
	q.Project = trimSlashes(q.Project)
	return q, nil
}

// trimSlashes drops trailing slashes from a path, keeping a lone "/".
func trimSlashes(p string) string {
	t := strings.TrimRight(p, "/")
	if t == "" && p != "" {
		return "/"
	}
	return t
}

// inProject reports whether a session's project matches q's project
// filter.
func (q Query) inProject(project string) bool {
	want := trimSlashes(q.Project)
	project = trimSlashes(project)
	switch {
	case project == want:
		return true
	case !q.ProjectTree:
		return false
	case want == "/":
		return strings.HasPrefix(project, "/")
	}
	return strings.HasPrefix(project, want+"/")
}

// Filters reports whether q has a filter: when it does not, every summary
// matches.
func (q Query) Filters() bool {
	return len(q.States) > 0 || len(q.Kinds) > 0 || q.ParentID != "" || !q.UpdatedSince.IsZero() ||
		q.Project != "" || len(q.Labels) > 0
}

// Match reports whether s passes q's filter. (Filters names the filters
// it reads.)
func (q Query) Match(s *Summary) bool {
	if len(q.States) > 0 && !slices.Contains(q.States, s.State) {
		return false
	}
	if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, s.Kind) {
		return false
	}
	if q.ParentID != "" && s.ParentID != q.ParentID {
		return false
	}
	if !q.UpdatedSince.IsZero() && s.UpdatedAt.Before(q.UpdatedSince) {
		return false
	}
	if q.Project != "" && !q.inProject(s.Project) {
		return false
	}
	for k, v := range q.Labels {
		if got, ok := s.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Key is a summary's position in an order: compare keys with Compare.
type Key struct {
	Time time.Time         `json:"t,omitzero"`
	ID   session.SessionID `json:"id"`
}

// KeyOf returns s's key in order o.
func KeyOf(o Order, s *Summary) Key {
	switch o {
	case OrderUpdatedDesc, OrderUpdatedAsc:
		return Key{Time: s.UpdatedAt, ID: s.ID}
	case OrderCreatedDesc, OrderCreatedAsc:
		return Key{Time: s.CreatedAt, ID: s.ID}
	}
	return Key{ID: s.ID}
}

// Compare orders two keys in o: negative when a comes first.
func Compare(o Order, a, b Key) int {
	c := a.Time.Compare(b.Time)
	if c == 0 {
		c = strings.Compare(string(a.ID), string(b.ID))
	}
	if o == OrderUpdatedDesc || o == OrderCreatedDesc {
		return -c
	}
	return c
}

// cursor is the decoded form of Page.Next: the order it was issued for, a
// fingerprint of the filter, and the key of the last item returned.
type cursor struct {
	Order  Order  `json:"o"`
	Filter string `json:"f"`
	After  Key    `json:"k"`
}

// filterFingerprint binds a cursor to its query's filter. The filters
// added after the first release are omitted when unset, so that a query
// without them keeps the fingerprint (and the cursors) it always had.
func filterFingerprint(q Query) string {
	b, _ := json.Marshal(struct {
		S []session.State
		K []session.SessionKind
		P session.SessionID
		U time.Time
		L map[string]string `json:",omitempty"`
		W string            `json:",omitempty"`
		T bool              `json:",omitempty"`
	}{q.States, q.Kinds, q.ParentID, q.UpdatedSince, q.Labels, q.Project, q.ProjectTree})
	return base64.RawURLEncoding.EncodeToString(b)
}

// EncodeCursor returns the cursor that resumes q after key.
func EncodeCursor(q Query, after Key) string {
	b, _ := json.Marshal(cursor{Order: q.Order, Filter: filterFingerprint(q), After: after})
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor returns the key q.Cursor resumes after. ok is false when q
// has no cursor.
func DecodeCursor(q Query) (after Key, ok bool, err error) {
	if q.Cursor == "" {
		return Key{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
	if err != nil || len(b) > 4096 {
		return Key{}, false, ErrBadCursor
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return Key{}, false, ErrBadCursor
	}
	if c.Order != q.Order || c.Filter != filterFingerprint(q) {
		return Key{}, false, fmt.Errorf("%w: issued for another order or filter", ErrBadCursor)
	}
	return c.After, true, nil
}

// joinNames lists names, comma-separated, for an error that says which
// values are valid.
func joinNames[T ~string](names []T) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(n))
	}
	return b.String()
}
