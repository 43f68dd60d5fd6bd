package summary

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/sessionstore/sessionstore/session"
)

// Index is an in-memory set of summaries, one per session ID, that answers
// queries (filter, order, keyset paging) and feeds subscribers. It knows
// nothing about where summaries come from: an adapter feeds it with Put,
// PutUnreadable and Delete. It is safe for concurrent use.
//
// Query sorts the matching set per call (O(n log n)); that is cheap for the
// tens of thousands of sessions one machine holds, and keeps Put O(1).
type Index struct {
	mu     sync.RWMutex
	items  map[session.SessionID]Summary
	bad    map[session.SessionID]Unreadable // sessions that exist but cannot be read; never in items
	subs   map[*Subscription]struct{}
	closed bool
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		items: make(map[session.SessionID]Summary),
		bad:   make(map[session.SessionID]Unreadable),
		subs:  make(map[*Subscription]struct{}),
	}
}

// Put inserts s, or replaces the summary stored for s.ID. A Put whose
// Revision is lower than the stored one is stale (a late writer of an
// older view) and is ignored; an equal revision replaces (lease or size
// refresh). Subscribers are notified of every accepted Put. Put never
// blocks on a subscriber. A session marked unreadable reads again.
func (ix *Index) Put(s Summary) {
	s = clone(s)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old, ok := ix.items[s.ID]; ok && s.Revision < old.Revision {
		return
	}
	delete(ix.bad, s.ID)
	ix.items[s.ID] = s
	ix.notifyLocked(Change{ID: s.ID, Summary: s})
}

// PutUnreadable records that session u.ID exists but cannot be read: its
// summary, if any, is removed, queries report it in Page.Unreadable, and
// subscribers get a Change with Unreadable set — unless it was already
// unreadable for the same reason. A later Put or Delete ends it.
func (ix *Index) PutUnreadable(u Unreadable) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old, ok := ix.bad[u.ID]; ok && old.Reason == u.Reason {
		return
	}
	delete(ix.items, u.ID)
	ix.bad[u.ID] = u
	ix.notifyLocked(Change{ID: u.ID, Unreadable: &u})
}

// Delete removes the summary of id (or its unreadable mark) and notifies
// subscribers. It reports whether there was one.
func (ix *Index) Delete(id session.SessionID) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	_, had := ix.items[id]
	_, bad := ix.bad[id]
	if !had && !bad {
		return false
	}
	delete(ix.items, id)
	delete(ix.bad, id)
	ix.notifyLocked(Change{ID: id, Deleted: true})
	return true
}

// Apply applies a Change from a subscription (of this index or another):
// Delete, PutUnreadable or Put, as the change says.
func (ix *Index) Apply(c Change) {
	switch {
	case c.Deleted:
		ix.Delete(c.ID)
	case c.Unreadable != nil:
		u := *c.Unreadable
		u.ID = c.ID
		ix.PutUnreadable(u)
	default:
		ix.Put(c.Summary)
	}
}

// Unreadable returns the sessions marked unreadable, in ID order.
func (ix *Index) Unreadable() []Unreadable {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.unreadableLocked()
}

func (ix *Index) unreadableLocked() []Unreadable {
	if len(ix.bad) == 0 {
		return nil
	}
	out := make([]Unreadable, 0, len(ix.bad))
	for _, u := range ix.bad {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Unreadable) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Get returns the summary stored for id.
func (ix *Index) Get(id session.SessionID) (Summary, bool) {
	ix.mu.RLock()
	s, ok := ix.items[id]
	ix.mu.RUnlock()
	if !ok {
		return Summary{}, false
	}
	return clone(s), true
}

// Len returns the number of summaries (unreadable sessions not counted).
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.items)
}

// Query returns one page of the summaries matching q, in q's order. With a
// cursor it returns the items strictly after the cursor's key, so paging
// returns every session not modified during the paging exactly once (a
// modified session moves in time orders and may be seen twice or not at
// all). Errors: an invalid query (see Query.Normalize), ErrBadCursor.
func (ix *Index) Query(q Query) (Page, error) {
	q, err := q.Normalize()
	if err != nil {
		return Page{}, err
	}
	after, resume, err := DecodeCursor(q)
	if err != nil {
		return Page{}, err
	}

	type entry struct {
		key Key
		s   Summary
	}
	var matched []entry
	ix.mu.RLock()
	bad := ix.unreadableLocked()
	for id := range ix.items {
		s := ix.items[id]
		if !q.Match(&s) {
			continue
		}
		k := KeyOf(q.Order, &s)
		if resume && Compare(q.Order, k, after) <= 0 {
			continue
		}
		matched = append(matched, entry{k, s})
	}
	ix.mu.RUnlock()

	slices.SortFunc(matched, func(a, b entry) int { return Compare(q.Order, a.key, b.key) })
	page := Page{Items: make([]Summary, 0, min(len(matched), q.Limit)), Unreadable: bad}
	for _, e := range matched[:min(len(matched), q.Limit)] {
		page.Items = append(page.Items, clone(e.s))
	}
	if len(matched) > q.Limit {
		page.Next = EncodeCursor(q, matched[q.Limit-1].key)
	}
	return page, nil
}

// Subscribe returns a subscription that first delivers a Change for every
// summary in the index, then a Change for every later Put and Delete. It is
// level-triggered: while the receiver lags, only the latest Change per ID
// is kept pending (so memory is bounded by the number of sessions), and
// pending changes are delivered in the order their IDs first became
// pending. A receiver therefore always converges to the index's state.
// The channel is closed when ctx is done, the subscription is closed, or
// the index is closed.
func (ix *Index) Subscribe(ctx context.Context) *Subscription {
	sub := &Subscription{
		ix:      ix,
		ch:      make(chan Change),
		pending: make(map[session.SessionID]pendingChange),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		close(sub.ch)
		close(sub.exited)
		sub.closeOnce.Do(func() { close(sub.done) })
		return sub
	}
	// The initial state is queued under the same lock that registers the
	// subscription, so no Put can fall between the two. IDs go in ID order
	// so that the first deliveries are deterministic.
	ids := make([]session.SessionID, 0, len(ix.items)+len(ix.bad))
	for id := range ix.items {
		ids = append(ids, id)
	}
	for id := range ix.bad {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b session.SessionID) int { return cmp.Compare(a, b) })
	for _, id := range ids {
		if u, ok := ix.bad[id]; ok {
			sub.pushLocked(Change{ID: id, Unreadable: &u})
			continue
		}
		sub.pushLocked(Change{ID: id, Summary: ix.items[id]})
	}
	ix.subs[sub] = struct{}{}
	ix.mu.Unlock()

	go sub.run(ctx)
	return sub
}

// Close closes every subscription; later subscriptions are closed at once.
// Put, Delete and Query keep working.
func (ix *Index) Close() {
	ix.mu.Lock()
	ix.closed = true
	subs := make([]*Subscription, 0, len(ix.subs))
	for s := range ix.subs {
		subs = append(subs, s)
	}
	ix.mu.Unlock()
	// Outside ix.mu: each subscription's goroutine takes ix.mu to
	// unregister before it exits, and Subscription.Close waits for that.
	for _, s := range subs {
		s.Close()
	}
}

func (ix *Index) notifyLocked(c Change) {
	for s := range ix.subs {
		s.push(c)
	}
}

// Subscription is a stream of Changes from an Index (see Index.Subscribe).
type Subscription struct {
	ix *Index
	ch chan Change

	mu      sync.Mutex
	pending map[session.SessionID]pendingChange
	order   []session.SessionID // IDs in pending, in first-pending order
	seq     uint64

	wake      chan struct{} // capacity 1: "pending changed"
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	exited    chan struct{} // closed when run has returned and ch is closed
}

// pendingChange is the latest undelivered Change for one ID; seq tells run
// whether the entry it sent was replaced while the send was in flight.
type pendingChange struct {
	c   Change
	seq uint64
}

// C returns the channel of changes. It is closed when the subscription
// ends.
func (s *Subscription) C() <-chan Change { return s.ch }

// Close ends the subscription and waits until its channel is closed.
// Pending changes are dropped. Close is idempotent.
func (s *Subscription) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	<-s.exited
}

func (s *Subscription) push(c Change) {
	s.mu.Lock()
	s.pushLocked(c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

func (s *Subscription) pushLocked(c Change) {
	s.seq++
	if _, ok := s.pending[c.ID]; !ok {
		s.order = append(s.order, c.ID)
	}
	s.pending[c.ID] = pendingChange{c: c, seq: s.seq}
}

// head returns the oldest pending change.
func (s *Subscription) head() (pendingChange, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) == 0 {
		return pendingChange{}, false
	}
	return s.pending[s.order[0]], true
}

// sent drops the head if it is still the entry that was delivered; if a
// newer change replaced it meanwhile, it stays at the head to be sent next.
func (s *Subscription) sent(p pendingChange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.pending[p.c.ID]; ok && cur.seq == p.seq {
		delete(s.pending, p.c.ID)
		s.order = s.order[1:]
		if len(s.order) == 0 {
			s.order = nil // let the backing array go
		}
	}
}

// run delivers pending changes until the subscription ends. It is the only
// sender on ch, so it is the one that closes it.
func (s *Subscription) run(ctx context.Context) {
	defer func() {
		s.ix.mu.Lock()
		delete(s.ix.subs, s)
		s.ix.mu.Unlock()
		close(s.ch)
		close(s.exited)
	}()
	for {
		p, ok := s.head()
		if !ok {
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			case <-ctx.Done():
				return
			}
		}
		// Deliver a private copy: the receiver may keep and mutate it.
		c := p.c
		c.Summary = clone(c.Summary)
		if c.Unreadable != nil {
			u := *c.Unreadable
			c.Unreadable = &u
		}
		select {
		case s.ch <- c:
			s.sent(p)
		case <-s.wake:
			// The head may have been replaced by a newer change for the
			// same ID: look again rather than send a stale one.
		case <-s.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// clone returns s with no memory shared with the original.
func clone(s Summary) Summary {
	if s.Lease.Holder != nil {
		h := *s.Lease.Holder
		s.Lease.Holder = &h
	}
	s.Labels = maps.Clone(s.Labels)
	if s.Origin != nil {
		o := *s.Origin
		s.Origin = &o
	}
	return s
}
