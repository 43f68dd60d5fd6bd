package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Writer is one session's lease held for a client, and the writes it
// makes: messages added, labels set, the last message popped, the
// conversation cleared. It keeps the session as of its latest stored
// revision, so that adding messages costs what they are (the aggregate
// grows and the store's writer appends a delta), not the session.
//
// A Writer is safe for concurrent use; its writes are serialised. After
// an error other than a refused input (ErrLeaseLost, ErrWriterFailed,
// ErrClosed) the Writer is done: Release it.
type Writer struct {
	mu   sync.Mutex
	w    sessionstore.Writer
	s    *session.Session // the latest stored revision, as an aggregate
	snap sessnap.Snapshot // its snapshot (sharing s's messages)
	rev  uint64
	now  func() time.Time
}

// CreateOptions say what a new session starts with. The zero value
// creates an empty session.
type CreateOptions struct {
	// ID names the session; empty mints one (sessionstore.NewID).
	ID session.SessionID
	// Title, when set, is the session's explicit title; otherwise the
	// first user message with text gives it one.
	Title string
	// Labels are the starting labels (session.ValidateLabel).
	Labels map[string]string
	// Workspace is where the session's agent works.
	Workspace session.Workspace
	// Environment names where the agent runs; empty fields are "local",
	// the host name and "sessions-serve".
	Environment session.EnvironmentRef
}

// Create creates a session as opts say and returns its Writer. Errors are
// the store's (sessionstore.ErrExists, ErrInvalidID, …) and an invalid
// option wraps sessionstore.ErrInvalidSnapshot.
func Create(ctx context.Context, st sessionstore.Store, opts CreateOptions, acq sessionstore.AcquireOptions) (*Writer, error) {
	id := opts.ID
	if id == "" {
		id = sessionstore.NewID()
	}
	if err := sessionstore.ValidateID(id); err != nil {
		return nil, err
	}
	env := opts.Environment
	if env.Provider == "" {
		env.Provider = "local"
	}
	if env.ID == "" {
		env.ID = hostname()
	}
	if env.Revision == "" {
		env.Revision = "sessions-serve"
	}
	s, err := session.New(session.Config{
		ID: id, CreatedAt: time.Now(), Kind: session.KindPrimary, EnvironmentRef: env,
		Labels: opts.Labels, Workspace: opts.Workspace,
	})
	if err == nil && opts.Title != "" {
		err = s.SetTitle(opts.Title, session.TitleExplicit)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sessionstore.ErrInvalidSnapshot, err)
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		return nil, err
	}
	w, err := st.Create(ctx, snap, acq)
	if err != nil {
		return nil, err
	}
	return &Writer{w: w, s: s, snap: snap, rev: 1, now: time.Now}, nil
}

// Acquire takes session id's lease, waiting up to wait for a holder to
// let it go (sessionstore.AcquireWithin: 0 refuses at once with a
// *sessionstore.LeaseHeldError), and loads its latest revision.
func Acquire(ctx context.Context, st sessionstore.Store, id session.SessionID, acq sessionstore.AcquireOptions, wait time.Duration) (*Writer, error) {
	w, err := sessionstore.AcquireWithin(ctx, st, id, acq, wait)
	if err != nil {
		return nil, err
	}
	// The holder's revision is the latest: nobody else writes while the
	// lease is ours, so what Load returns is what we append to.
	rec, err := st.Load(ctx, id)
	if err == nil && rec.Revision != w.Revision() {
		err = fmt.Errorf("%w: session %s: loaded revision %d, the writer knows %d", sessionstore.ErrConflict, id, rec.Revision, w.Revision())
	}
	var s *session.Session
	if err == nil {
		s, err = rec.Session()
	}
	if err != nil {
		_ = w.Release(ctx) // the error is the load's; the lease goes back as it came
		return nil, err
	}
	return &Writer{w: w, s: s, snap: rec.Snapshot, rev: rec.Revision, now: time.Now}, nil
}

// ID returns the session's ID.
func (w *Writer) ID() session.SessionID { return w.w.ID() }

// Generation returns the lease's generation.
func (w *Writer) Generation() uint64 { return w.w.Generation() }

// Revision returns the latest revision this writer stored or loaded.
func (w *Writer) Revision() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rev
}

// Len returns how many messages the conversation holds.
func (w *Writer) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.snap.Messages)
}

// AddMessages appends msgs to the conversation in one revision, durable
// when it returns, and returns that revision. A message without a
// creation time gets the current one; the first user message with text
// titles an untitled session. A message the session refuses (invalid, or
// a terminal session) wraps sessionstore.ErrInvalidSnapshot and nothing
// is written. With expected > 0, a session whose latest revision is not
// expected is sessionstore.ErrConflict.
func (w *Writer) AddMessages(ctx context.Context, expected uint64, msgs []session.Message) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.expectLocked(expected); err != nil {
		return 0, err
	}
	if w.s == nil {
		return 0, errBroken
	}
	if len(msgs) == 0 {
		return w.rev, nil
	}
	now := w.now().UTC()
	for i, m := range msgs {
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		if err := w.s.AppendMessage(m); err != nil {
			w.rebuildLocked()
			return 0, fmt.Errorf("%w: message %d: %w", sessionstore.ErrInvalidSnapshot, i, err)
		}
		if t, _ := w.s.Title(); t == "" && m.Role == session.RoleUser {
			if t := session.TitleFromPrompt(textOf(m)); t != "" {
				_ = w.s.SetTitle(t, session.TitleFirstPrompt) // a title from a prompt is always valid
			}
		}
	}
	return w.storeLocked(ctx)
}

// SetLabels sets and removes labels in one revision (none when nothing
// changes). An invalid label wraps sessionstore.ErrInvalidSnapshot and
// nothing is written.
func (w *Writer) SetLabels(ctx context.Context, set map[string]string, remove []string) (uint64, map[string]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.s == nil {
		return 0, nil, errBroken
	}
	changed := false
	for _, k := range remove {
		if err := session.ValidateLabelKey(k); err != nil {
			w.rebuildLocked()
			return 0, nil, fmt.Errorf("%w: %w", sessionstore.ErrInvalidSnapshot, err)
		}
		changed = w.s.RemoveLabel(k) || changed
	}
	for k, v := range set {
		if old, ok := w.s.Label(k); ok && old == v {
			continue
		}
		if err := w.s.SetLabel(k, v); err != nil {
			w.rebuildLocked()
			return 0, nil, fmt.Errorf("%w: %w", sessionstore.ErrInvalidSnapshot, err)
		}
		changed = true
	}
	if !changed {
		return w.rev, w.s.Labels(), nil
	}
	rev, err := w.storeLocked(ctx)
	if err != nil {
		return 0, nil, err
	}
	return rev, w.s.Labels(), nil
}

// Pop removes the conversation's last message in a new revision and
// returns it (ok false, and nothing written, when the conversation is
// empty). The revisions before keep it: History still has every message
// ever appended. It costs the session (the aggregate is restored from the
// shorter snapshot, and the store writes the revision whole), because the
// session's aggregate only grows; a pop is rare beside an append.
func (w *Writer) Pop(ctx context.Context) (m session.Message, rev uint64, ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.snap.Messages)
	if n == 0 {
		return session.Message{}, w.rev, false, nil
	}
	last := w.snap.Messages[n-1]
	rev, err = w.truncateLocked(ctx, n-1)
	if err != nil {
		return session.Message{}, 0, false, err
	}
	return last, rev, true, nil
}

// Clear empties the conversation in a new revision (none when it is
// empty), as Pop does for every message.
func (w *Writer) Clear(ctx context.Context) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.snap.Messages) == 0 {
		return w.rev, nil
	}
	return w.truncateLocked(ctx, 0)
}

// truncateLocked stores the latest snapshot with its first n messages.
func (w *Writer) truncateLocked(ctx context.Context, n int) (uint64, error) {
	snap := w.snap
	snap.Messages = snap.Messages[:n:n]
	s, err := snap.Restore()
	if err != nil {
		return 0, err
	}
	rev, err := w.w.Append(ctx, w.rev, snap)
	if err != nil {
		return 0, err
	}
	w.s, w.snap, w.rev = s, snap, rev
	return rev, nil
}

// Heartbeat proves the holder alive (sessionstore.Writer.Heartbeat).
func (w *Writer) Heartbeat(ctx context.Context) error { return w.w.Heartbeat(ctx) }

// Delete removes the session and releases the lease.
func (w *Writer) Delete(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Delete(ctx)
}

// Release gives the lease up cleanly. Idempotent.
func (w *Writer) Release(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Release(ctx)
}

func (w *Writer) expectLocked(expected uint64) error {
	if expected != 0 && expected != w.rev {
		return fmt.Errorf("%w: session %s is at revision %d, not %d", sessionstore.ErrConflict, w.ID(), w.rev, expected)
	}
	return nil
}

// storeLocked appends the aggregate as the next revision. On error the
// aggregate goes back to the stored revision.
func (w *Writer) storeLocked(ctx context.Context) (uint64, error) {
	snap, err := sessnap.Of(w.s)
	if err == nil {
		var rev uint64
		rev, err = w.w.Append(ctx, w.rev, snap)
		if err == nil {
			w.snap, w.rev = snap, rev
			return rev, nil
		}
	}
	w.rebuildLocked()
	return 0, err
}

// rebuildLocked puts the aggregate back to the stored revision, after a
// write that changed it failed. It costs the session; it happens on
// refused input only.
func (w *Writer) rebuildLocked() {
	s, err := w.snap.Restore()
	if err != nil {
		// The snapshot was stored, so it restores; if it ever does not,
		// the writer must not go on from a changed aggregate.
		w.s = nil
		return
	}
	w.s = s
}

// errBroken is what a writer whose aggregate could not be restored says.
var errBroken = errors.New("server: the session's latest revision no longer restores")

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

func textOf(m session.Message) string {
	for _, p := range m.Parts {
		if p.Type == session.PartText && p.Text != "" {
			return p.Text
		}
	}
	return ""
}

// expect checks the session is at revision expected (0: any).
func (w *Writer) expect(expected uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expectLocked(expected)
}
