package server

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Writer is one session's lease held for a client, and the writes it
// makes: messages added, labels set, the last message popped, the
// conversation cleared. It is a sessionstore.Handle (which keeps the
// session as of its latest stored revision, so that adding messages costs
// what they are) with the client's expected revision checked before each
// write.
//
// A Writer is safe for concurrent use; its writes are serialised. After
// an error other than a refused input (ErrLeaseLost, ErrWriterFailed,
// ErrClosed) the Writer is done: Release it.
type Writer struct {
	mu sync.Mutex // makes a write and the check of its expected revision one step
	h  *sessionstore.Handle
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
	h, err := sessionstore.NewSession(ctx, st, opts.ID, sessionstore.HandleOptions{
		Config: session.Config{
			CreatedAt: time.Now(), Kind: session.KindPrimary, EnvironmentRef: env,
			Labels: opts.Labels, Workspace: opts.Workspace,
		},
		Title: opts.Title, Acquire: acq,
	})
	if err != nil {
		return nil, err
	}
	return &Writer{h: h}, nil
}

// Acquire takes session id's lease, waiting up to wait for a holder to
// let it go (sessionstore.AcquireWithin: 0 refuses at once with a
// *sessionstore.LeaseHeldError), and holds its latest revision.
func Acquire(ctx context.Context, st sessionstore.Store, id session.SessionID, acq sessionstore.AcquireOptions, wait time.Duration) (*Writer, error) {
	w, err := sessionstore.AcquireWithin(ctx, st, id, acq, wait)
	if err != nil {
		return nil, err
	}
	h, err := sessionstore.Hold(ctx, w)
	if err != nil {
		return nil, err
	}
	return &Writer{h: h}, nil
}

// ID returns the session's ID.
func (w *Writer) ID() session.SessionID { return w.h.ID() }

// Generation returns the lease's generation.
func (w *Writer) Generation() uint64 { return w.h.Generation() }

// Recovery reports what acquiring the lease found and repaired.
func (w *Writer) Recovery() sessionstore.RecoveryReport { return w.h.Recovery() }

// Revision returns the latest revision this writer stored or loaded.
func (w *Writer) Revision() uint64 { return w.h.Revision() }

// Len returns how many messages the conversation holds.
func (w *Writer) Len() int { return len(w.h.Snapshot().Messages) }

// AddMessages appends msgs to the conversation in one revision, durable
// when it returns, and returns that revision (sessionstore.Handle.Add:
// the lifecycle follows the messages, each gets an ID and a creation
// time, the first user message with text titles an untitled session). A
// message the session refuses (invalid, or a terminal session) wraps
// sessionstore.ErrInvalidSnapshot and nothing is written. With expected >
// 0, a session whose latest revision is not expected is
// sessionstore.ErrConflict.
func (w *Writer) AddMessages(ctx context.Context, expected uint64, msgs []session.Message) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.expectLocked(expected); err != nil {
		return 0, err
	}
	return w.h.Add(ctx, msgs...)
}

// SetLabels sets and removes labels in one revision (none when nothing
// changes). An invalid label wraps sessionstore.ErrInvalidSnapshot and
// nothing is written.
func (w *Writer) SetLabels(ctx context.Context, set map[string]string, remove []string) (uint64, map[string]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	snap := w.h.Snapshot()
	changed := false
	for _, k := range remove {
		if err := session.ValidateLabelKey(k); err != nil {
			return 0, nil, fmt.Errorf("%w: %w", sessionstore.ErrInvalidSnapshot, err)
		}
		_, had := snap.Labels[k]
		changed = changed || had
	}
	for k, v := range set {
		if old, ok := snap.Labels[k]; !ok || old != v {
			changed = true
		}
	}
	if !changed {
		return w.h.Revision(), copyLabels(snap.Labels), nil
	}
	var labels map[string]string
	rev, err := w.h.Update(ctx, func(s *session.Session) error {
		for _, k := range remove {
			s.RemoveLabel(k)
		}
		for k, v := range set {
			if err := s.SetLabel(k, v); err != nil {
				return err
			}
		}
		labels = s.Labels()
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return rev, labels, nil
}

// Pop removes the conversation's last message in a new revision and
// returns it (ok false, and nothing written, when the conversation is
// empty). The revisions before keep it: History still has every message
// ever appended.
func (w *Writer) Pop(ctx context.Context) (m session.Message, rev uint64, ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok, err = w.h.Pop(ctx)
	if err != nil {
		return session.Message{}, 0, false, err
	}
	return m, w.h.Revision(), ok, nil
}

// Rewind makes the conversation its messages up to ref (a count K or a
// message ID, session.MessagePoint) in a new revision, idle
// (sessionstore.Handle.Rewind), and returns the revision and how many
// messages remain. A ref that names no message of the conversation wraps
// sessionstore.ErrNotFound and nothing is written.
func (w *Writer) Rewind(ctx context.Context, expected uint64, ref string) (rev uint64, n int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.expectLocked(expected); err != nil {
		return 0, 0, err
	}
	conv := w.h.Snapshot().Messages
	n, ok := session.MessagePoint(conv, ref)
	if !ok {
		return 0, 0, fmt.Errorf("%w: message %q in session %s", sessionstore.ErrNotFound, ref, w.ID())
	}
	rev, err = w.h.Rewind(ctx, n)
	return rev, n, err
}

// Clear empties the conversation in a new revision (none when it is
// empty and idle): sessionstore.Handle.Rewind to no message.
func (w *Writer) Clear(ctx context.Context) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.h.Rewind(ctx, 0)
}

// Heartbeat proves the holder alive (sessionstore.Writer.Heartbeat).
func (w *Writer) Heartbeat(ctx context.Context) error { return w.h.Heartbeat(ctx) }

// Delete removes the session and releases the lease.
func (w *Writer) Delete(ctx context.Context) error { return w.h.Delete(ctx) }

// Release gives the lease up cleanly. Idempotent.
func (w *Writer) Release(ctx context.Context) error { return w.h.Close(ctx) }

func (w *Writer) expectLocked(expected uint64) error {
	if rev := w.h.Revision(); expected != 0 && expected != rev {
		return fmt.Errorf("%w: session %s is at revision %d, not %d", sessionstore.ErrConflict, w.ID(), rev, expected)
	}
	return nil
}

// expect checks the session is at revision expected (0: any).
func (w *Writer) expect(expected uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expectLocked(expected)
}

func copyLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}
