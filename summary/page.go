package summary

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// Selection picks the first Limit+1 summaries offered, in a query's
// order, among those matching its filter and following its cursor: the
// page, and whether there is a next one. It pages exactly as Index.Query
// does, for an adapter that keeps its summaries in a collection of its
// own (a slice it streams through, files it scans). Summaries are offered
// with an index into the caller's collection, which the selection reads
// back through at (for IDs, which break ties). It selects with a
// quickselect over compact keys — expected O(n) comparisons, then a sort
// of the page — rather than keep a bounded heap, whose worst case
// (sessions offered in time order) is the common case, since IDs are
// time-ordered.
//
//	sel, err := summary.NewSelection(q, func(i int) *summary.Summary { return &all[i] })
//	sel.Reset(len(all))
//	for i := range all {
//		sel.Offer(i)
//	}
//	page, next := sel.Page(sel.Sorted()) // indices into all, and Page.Next
type Selection struct {
	q      Query
	after  Key
	resume bool
	// dir is 1 when the order puts earlier times first, -1 otherwise.
	dir  int
	at   func(i int) *Summary // nil for a selection made by NewSelectionOf
	id   func(i int) session.SessionID
	cand []rankKey
}

// rankKey is a candidate's place in the order: its key's time, and its
// index for the ID (kept out of the key so that candidates hold no
// pointer, and moving them costs no write barrier).
type rankKey struct {
	sec  int64
	nsec int32
	i    int32
}

// NewSelection returns an empty selection for q, reading the summaries
// offered through at. Errors: an invalid query (see Query.Normalize),
// ErrBadCursor.
func NewSelection(q Query, at func(i int) *Summary) (*Selection, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	after, resume, err := DecodeCursor(q)
	if err != nil {
		return nil, err
	}
	dir := 1
	if Compare(q.Order, Key{Time: time.Unix(0, 0)}, Key{Time: time.Unix(1, 0)}) > 0 {
		dir = -1
	}
	return &Selection{q: q, after: after, resume: resume, dir: dir, at: at,
		id: func(i int) session.SessionID { return at(i).ID }}, nil
}

// NewSelectionOf returns an empty selection for q over a collection that
// keeps less than a Summary per item (an on-disk catalog of ten thousand
// sessions): the caller filters each item itself (Query.Match, on what it
// has, when Query.Filters) and offers the ones that pass with their key
// (OfferKey); id returns item i's ID, which breaks ties. Errors: those of
// NewSelection.
func NewSelectionOf(q Query, id func(i int) session.SessionID) (*Selection, error) {
	p, err := NewSelection(q, nil)
	if err != nil {
		return nil, err
	}
	p.at, p.id = nil, id
	return p, nil
}

// Query returns the selection's query, normalized.
func (p *Selection) Query() Query { return p.q }

// Reset empties the selection, making room for n candidates.
func (p *Selection) Reset(n int) { p.cand = slices.Grow(p.cand[:0], n) }

// Offer considers summary i.
func (p *Selection) Offer(i int) {
	s := p.at(i)
	if !p.q.Match(s) {
		return
	}
	p.OfferKey(i, KeyOf(p.q.Order, s))
}

// OfferKey considers item i, which matches the query's filter and whose
// key in the query's order is k (KeyOf).
func (p *Selection) OfferKey(i int, k Key) {
	if p.resume && Compare(p.q.Order, k, p.after) <= 0 {
		return
	}
	p.cand = append(p.cand, rankKey{sec: k.Time.Unix(), nsec: int32(k.Time.Nanosecond()), i: int32(i)}) //nolint:gosec // G115: nanoseconds are < 1e9; 2^31 summaries would not fit in memory
}

// cmp orders two candidates as Compare orders their keys: by time, then
// by ID, reversed for descending orders. (TestSelectionPagesAsQuery holds
// the two to the same pages.)
func (p *Selection) cmp(a, b rankKey) int {
	c := cmp.Compare(a.sec, b.sec)
	if c == 0 {
		c = cmp.Compare(a.nsec, b.nsec)
	}
	if c == 0 {
		c = strings.Compare(string(p.id(int(a.i))), string(p.id(int(b.i))))
	}
	return c * p.dir
}

// Sorted returns the indices of the first Limit+1 candidates in order:
// the page and, if there is a next page, the first item of it.
func (p *Selection) Sorted() []int {
	c := p.cand
	if n := p.q.Limit + 1; len(c) > n {
		selectFirst(c, n, p.cmp)
		c = c[:n]
	}
	slices.SortFunc(c, p.cmp)
	out := make([]int, len(c))
	for j, k := range c {
		out[j] = int(k.i)
	}
	return out
}

// Page cuts sorted (from Sorted) to the page and returns the cursor of
// the next page ("" when this is the last), as Index.Query does.
func (p *Selection) Page(sorted []int) ([]int, string) {
	if len(sorted) <= p.q.Limit {
		return sorted, ""
	}
	page := sorted[:p.q.Limit]
	last := page[len(page)-1]
	if p.at != nil {
		return page, EncodeCursor(p.q, KeyOf(p.q.Order, p.at(last)))
	}
	k := Key{ID: p.id(last)}
	if p.q.Order != OrderIDAsc {
		for _, c := range p.cand {
			if int(c.i) == last {
				k.Time = time.Unix(c.sec, int64(c.nsec)).UTC()
				break
			}
		}
	}
	return page, EncodeCursor(p.q, k)
}

// selectFirst reorders c so that its first k elements are its k least in
// cmp's order (themselves in no particular order): a quickselect with a
// median-of-three pivot and Hoare's partition. The elements are distinct
// in cmp (keys end with the session ID).
func selectFirst[T any](c []T, k int, cmp func(a, b T) int) {
	lo, hi := 0, len(c)
	for hi-lo > 12 {
		m := int(uint(lo+hi) >> 1)
		if cmp(c[m], c[lo]) < 0 {
			c[m], c[lo] = c[lo], c[m]
		}
		if cmp(c[hi-1], c[m]) < 0 {
			c[hi-1], c[m] = c[m], c[hi-1]
			if cmp(c[m], c[lo]) < 0 {
				c[m], c[lo] = c[lo], c[m]
			}
		}
		// c[lo] <= pivot <= c[hi-1]: the scans below cannot run off the range.
		pivot := c[m]
		i, j := lo, hi-1
		for i <= j {
			for cmp(c[i], pivot) < 0 {
				i++
			}
			for cmp(pivot, c[j]) < 0 {
				j--
			}
			if i <= j {
				c[i], c[j] = c[j], c[i]
				i++
				j--
			}
		}
		// Now c[lo:j+1] <= pivot <= c[i:hi], and anything between is the
		// pivot itself.
		switch {
		case k-1 <= j:
			hi = j + 1
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
	for i := lo + 1; i < hi; i++ { // insertion sort of what is left
		for j := i; j > lo && cmp(c[j], c[j-1]) < 0; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}
