package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// A handle is a Writer held for one client, named by a random token the
// client presents with every write. It lives until the client releases
// it, the session is deleted, its lease is lost, or the client stops
// showing signs of life (a request naming the handle, or a heartbeat)
// for longer than the grace: then the server releases the lease, so that
// a client that vanished never keeps a session from others for longer
// than that. A handle whose request is in progress never expires.
//
// The table remembers handles it ended (tombstones, for a while) so that
// a client presenting one learns why, rather than that it never existed.

// handle is one client's Writer.
type handle struct {
	token  string
	client string
	w      *Writer

	// Guarded by the table's mutex.
	seen time.Time // the last sign of life
	busy int       // requests in progress
}

// tomb says why a handle ended.
type tomb struct {
	id     session.SessionID
	reason string // "expired", "released", "lease_lost", "deleted", "failed"
	at     time.Time
}

// handles is the table of open handles.
type handles struct {
	mu        sync.Mutex
	byToken   map[string]*handle
	perClient map[string]int // open and reserved handles per client
	pending   int            // reserved handles not yet added
	tombs     map[string]tomb

	grace        time.Duration
	max          int
	maxPerClient int
}

func newHandles(grace time.Duration, max, maxPerClient int) *handles {
	return &handles{
		byToken: map[string]*handle{}, perClient: map[string]int{}, tombs: map[string]tomb{},
		grace: grace, max: max, maxPerClient: maxPerClient,
	}
}

// maxTombs bounds the tombstones kept; they also go after tombLife.
const maxTombs = 4096

func (t *handles) tombLife() time.Duration { return 10 * t.grace }

// reserve checks that client may open one more handle and counts it; the
// caller then adds it or calls unreserve. It returns false when a limit
// is reached.
func (t *handles) reserve(client string) (ok bool, total bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byToken)+t.pending >= t.max {
		return false, true
	}
	if t.perClient[client] >= t.maxPerClient {
		return false, false
	}
	t.perClient[client]++
	t.pending++
	return true, false
}

func (t *handles) unreserve(client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	t.decLocked(client)
}

func (t *handles) decLocked(client string) {
	if t.perClient[client]--; t.perClient[client] <= 0 {
		delete(t.perClient, client)
	}
}

// add opens a handle (reserved for client) for w and returns its token.
func (t *handles) add(client string, w *Writer) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	h := &handle{token: hex.EncodeToString(b[:]), client: client, w: w, seen: time.Now()}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	t.byToken[h.token] = h
	return h.token
}

// use returns the handle of token, marked busy until done is called, or
// the tombstone that says why it ended (ok false, tomb zero for a token
// never issued).
func (t *handles) use(token string) (h *handle, done func(), why tomb, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok = t.byToken[token]
	if !ok {
		return nil, nil, t.tombs[token], false
	}
	h.busy++
	h.seen = time.Now()
	return h, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		h.busy--
		h.seen = time.Now()
	}, tomb{}, true
}

// end removes the handle of token for reason, and returns it (nil when
// it was already gone). The caller releases its writer.
func (t *handles) end(token, reason string) *handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.endLocked(token, reason)
}

func (t *handles) endLocked(token, reason string) *handle {
	h, ok := t.byToken[token]
	if !ok {
		return nil
	}
	delete(t.byToken, token)
	t.decLocked(h.client)
	if len(t.tombs) < maxTombs {
		t.tombs[token] = tomb{id: h.w.ID(), reason: reason, at: time.Now()}
	}
	return h
}

// expire ends the handles idle past the grace, forgets old tombstones,
// and returns the ended handles (their writers for the caller to
// release).
func (t *handles) expire() []*handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	var out []*handle
	for token, h := range t.byToken {
		if h.busy == 0 && now.Sub(h.seen) > t.grace {
			out = append(out, t.endLocked(token, "expired"))
		}
	}
	for token, tb := range t.tombs {
		if now.Sub(tb.at) > t.tombLife() {
			delete(t.tombs, token)
		}
	}
	return out
}

// all ends every handle (the server is closing) and returns them.
func (t *handles) all() []*handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*handle, 0, len(t.byToken))
	for token := range t.byToken {
		out = append(out, t.endLocked(token, "released"))
	}
	return out
}

// count returns how many handles are open.
func (t *handles) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byToken)
}

// sweep ends idle handles every quarter of the grace until ctx is done,
// releasing their leases with release.
func (t *handles) sweep(ctx context.Context, release func([]*handle)) {
	tick := time.NewTicker(t.grace / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if hs := t.expire(); len(hs) > 0 {
				release(hs)
			}
		}
	}
}
