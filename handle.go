package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Handle is one session held for an agent: the session's lease (a
// Writer) and its latest revision as an aggregate, so that adding a
// message is one call that stores what changed (a delta where the adapter
// writes them), not the session again. It drives the session's lifecycle
// for an agent's common path (Add), gives each message an ID, and rewinds
// (Rewind, Pop). It works on every adapter: it uses nothing but Store and
// Writer.
//
// A Handle is safe for concurrent use; its writes are serialised. After
// an error other than a refused input (ErrLeaseLost, ErrWriterFailed,
// ErrClosed) the Handle is done: Close it.
type Handle struct {
	mu   sync.Mutex
	w    Writer
	s    *session.Session // the latest stored revision, as an aggregate (nil: broken)
	snap sessnap.Snapshot // its snapshot (sharing s's messages)
	rev  uint64
	now  func() time.Time
}

// HandleOptions say how Open creates a session that does not exist yet,
// and how it takes the lease. The zero value works.
type HandleOptions struct {
	// Config is the new session's configuration; its ID is Open's. A zero
	// CreatedAt is now, an empty Kind is primary, and an empty
	// EnvironmentRef is this host ("local", its host name, "sessionstore").
	Config session.Config
	// Title, when set, is a new session's explicit title; otherwise the
	// first user message with text gives it one.
	Title string
	// Acquire tunes the lease (label, heartbeat, redactor).
	Acquire AcquireOptions
}

// Open returns a handle on session id: the session resumed (Resume) when
// it exists, else created as opts say, with a new ID when id is empty.
// Errors are the store's (ErrInvalidID, ErrLeaseHeld's wait ends with
// ctx, …); an invalid Config wraps ErrInvalidSnapshot. On error no lease
// is held.
func Open(ctx context.Context, st Store, id session.SessionID, opts HandleOptions) (*Handle, error) {
	if id != "" {
		h, err := resumeHandle(ctx, st, id, opts.Acquire)
		if !errors.Is(err, ErrNotFound) {
			return h, err
		}
	}
	h, err := NewSession(ctx, st, id, opts)
	if errors.Is(err, ErrExists) && id != "" {
		return resumeHandle(ctx, st, id, opts.Acquire) // created meanwhile by another
	}
	return h, err
}

// NewSession creates session id (a new ID when empty) as opts say and
// returns its handle. A session that exists already is ErrExists.
func NewSession(ctx context.Context, st Store, id session.SessionID, opts HandleOptions) (*Handle, error) {
	if id == "" {
		id = NewID()
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	cfg := opts.Config
	cfg.ID = id
	if cfg.CreatedAt.IsZero() {
		cfg.CreatedAt = time.Now()
	}
	if cfg.Kind == "" {
		cfg.Kind = session.KindPrimary
	}
	if cfg.EnvironmentRef == (session.EnvironmentRef{}) {
		cfg.EnvironmentRef = session.EnvironmentRef{Provider: "local", ID: hostname(), Revision: "sessionstore"}
	}
	s, err := session.New(cfg)
	if err == nil && opts.Title != "" {
		err = s.SetTitle(opts.Title, session.TitleExplicit)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		return nil, err
	}
	w, err := st.Create(ctx, snap, opts.Acquire)
	if err != nil {
		return nil, err
	}
	return &Handle{w: w, s: s, snap: snap, rev: w.Revision(), now: time.Now}, nil
}

// resumeHandle acquires session id and holds it.
func resumeHandle(ctx context.Context, st Store, id session.SessionID, opts AcquireOptions) (*Handle, error) {
	w, err := st.Acquire(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	return Hold(ctx, w)
}

// Hold returns a handle on the session w holds the lease of, at its latest
// revision (Writer.Latest: what acquiring read already, where the adapter
// can). On error w is released.
func Hold(ctx context.Context, w Writer) (*Handle, error) {
	rec, err := w.Latest(ctx)
	var s *session.Session
	if err == nil {
		s, err = rec.Session()
	}
	if err != nil {
		_ = w.Release(context.WithoutCancel(ctx)) // the error is the load's
		return nil, err
	}
	return &Handle{w: w, s: s, snap: rec.Snapshot, rev: rec.Revision, now: time.Now}, nil
}

// ID returns the session's ID.
func (h *Handle) ID() session.SessionID { return h.w.ID() }

// Generation returns the lease's generation.
func (h *Handle) Generation() uint64 { return h.w.Generation() }

// Recovery reports what acquiring the lease found and repaired.
func (h *Handle) Recovery() RecoveryReport { return h.w.Recovery() }

// Revision returns the latest revision this handle stored or loaded.
func (h *Handle) Revision() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev
}

// Snapshot returns the latest revision's snapshot. Its messages are
// shared and read-only.
func (h *Handle) Snapshot() sessnap.Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snap
}

// Add appends msgs to the conversation in one revision, durable when it
// returns, and returns that revision. Each message is recorded as an
// agent's turn goes:
//
//   - a user message with text that is not Injected starts a turn (ending
//     the one running);
//   - an assistant or tool message outside a turn starts one;
//   - an assistant message counts its tool calls (Session.RecordToolCall)
//     and, when it makes none, ends the turn: it is the model's answer;
//   - a message's Usage is added to the session's (Session.AddUsage).
//
// A paused turn (awaiting an approval) is left as it is. A message
// without an ID gets a new one (session.NewMessageID), one without a
// creation time the current time, and the first user message with text
// titles an untitled session. A message the session refuses (invalid, a
// duplicate ID, a terminal session) wraps ErrInvalidSnapshot and nothing
// is written.
func (h *Handle) Add(ctx context.Context, msgs ...session.Message) (uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		return 0, errBroken
	}
	if len(msgs) == 0 {
		return h.rev, nil
	}
	now := h.now().UTC()
	for i, m := range msgs {
		if err := h.addLocked(m, now); err != nil {
			h.rebuildLocked()
			return 0, fmt.Errorf("%w: message %d: %w", ErrInvalidSnapshot, i, err)
		}
	}
	return h.storeLocked(ctx)
}

// addLocked adds m to the aggregate, driving the lifecycle (Add).
func (h *Handle) addLocked(m session.Message, now time.Time) error {
	s := h.s
	if m.ID == "" {
		m.ID = session.NewMessageID()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	prompt := textOf(m)
	calls := 0
	for _, p := range m.Parts {
		if p.Type == session.PartToolCall {
			calls++
		}
	}
	var err error
	switch st := s.State(); {
	case st.Terminal():
		// AppendMessage says why.
	case m.Role == session.RoleUser && !m.Injected && prompt != "":
		if st == session.StateRunning {
			err = s.EndTurn()
		}
		if err == nil && st != session.StateAwaiting {
			err = s.BeginTurn()
		}
	case (m.Role == session.RoleAssistant || m.Role == session.RoleTool) && st == session.StateIdle:
		err = s.BeginTurn()
	}
	if err == nil {
		err = s.AppendMessage(m)
	}
	running := s.State() == session.StateRunning
	for range calls {
		if err == nil && running {
			err = s.RecordToolCall()
		}
	}
	if err == nil && running && m.Usage != nil {
		err = s.AddUsage(*m.Usage)
	}
	if err == nil && running && m.Role == session.RoleAssistant && calls == 0 {
		err = s.EndTurn()
	}
	if t, _ := s.Title(); err == nil && t == "" && m.Role == session.RoleUser && prompt != "" {
		if t := session.TitleFromPrompt(prompt); t != "" {
			err = s.SetTitle(t, session.TitleFirstPrompt)
		}
	}
	return err
}

// Update applies change to the session (ending a turn, completing the
// session, setting labels: anything the aggregate does) and stores the
// result as one revision, durable when it returns; a change that changes
// nothing still writes a revision. An error of change wraps
// ErrInvalidSnapshot, and then nothing is written.
func (h *Handle) Update(ctx context.Context, change func(s *session.Session) error) (uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		return 0, errBroken
	}
	if err := change(h.s); err != nil {
		h.rebuildLocked()
		return 0, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	return h.storeLocked(ctx)
}

// Rewind makes the conversation its first n messages in a new revision
// (none when it holds n already), with the session idle: a turn running
// or paused ends. The revisions before keep every message (History,
// LoadRevision, Fork). A terminal session, or an n beyond the
// conversation, wraps ErrInvalidSnapshot and nothing is written. Name a
// point by message ID with session.MessagePoint.
func (h *Handle) Rewind(ctx context.Context, n int) (uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n < 0 || n > len(h.snap.Messages) {
		return 0, fmt.Errorf("%w: session %s: no point at message %d (it holds %d)", ErrInvalidSnapshot, h.w.ID(), n, len(h.snap.Messages))
	}
	if n == len(h.snap.Messages) && !h.snap.State.Terminal() && h.snap.State != session.StateRunning && h.snap.State != session.StateAwaiting {
		return h.rev, nil
	}
	return h.truncateLocked(ctx, n, true)
}

// Pop removes the conversation's last message in a new revision and
// returns it (ok false, and nothing written, when the conversation is
// empty). The lifecycle state stays as it is; the revisions before keep
// the message.
func (h *Handle) Pop(ctx context.Context) (m session.Message, ok bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.snap.Messages)
	if n == 0 {
		return session.Message{}, false, nil
	}
	last := h.snap.Messages[n-1]
	if _, err := h.truncateLocked(ctx, n-1, false); err != nil {
		return session.Message{}, false, err
	}
	return last, true, nil
}

// truncateLocked stores the latest snapshot with its first n messages,
// and idle when idle is set.
func (h *Handle) truncateLocked(ctx context.Context, n int, idle bool) (uint64, error) {
	if _, err := truncated(h.snap, n, idle); err != nil {
		return 0, err
	}
	if h.s == nil {
		return 0, errBroken
	}
	// The aggregate keeps its validated first n messages (nothing is
	// restored), and its conversation stays the stored one's memory, so
	// that the writer sees a rewind and writes the few bytes that drop
	// the rest.
	if err := h.s.Truncate(n, idle); err != nil {
		h.rebuildLocked()
		return 0, fmt.Errorf("%w: session %s: %w", ErrInvalidSnapshot, h.w.ID(), err)
	}
	return h.storeLocked(ctx)
}

// truncated returns snap with its first n messages, and idle when idle is
// set (a terminal session is refused then: its lifecycle ended).
func truncated(snap sessnap.Snapshot, n int, idle bool) (sessnap.Snapshot, error) {
	snap.Messages = snap.Messages[:n:n]
	if idle {
		switch snap.State {
		case session.StateRunning, session.StateAwaiting:
			snap.State, snap.Pending = session.StateIdle, nil
		case session.StateIdle:
		default:
			return sessnap.Snapshot{}, fmt.Errorf("%w: session %s is %s: a rewind needs a session that has not ended", ErrInvalidSnapshot, snap.ID, snap.State)
		}
	}
	return snap, nil
}

// ForkAt creates a new session (newID, minted when empty) whose
// conversation is session from's first messages up to at (a count K or a
// message ID, session.MessagePoint) at its latest revision, and returns
// its handle. The new session is idle whatever from's state, keeps from's
// title (or takes one from its first prompt), and its relationship says
// it is a fork of from at that message (ParentID, and ForkedAt: the last
// message's ID). Its revision 1 is from's revision as Store.Fork copies
// it; revision 2 is the conversation cut at the message. A point that
// names no message of from is ErrNotFound.
func ForkAt(ctx context.Context, st Store, from session.SessionID, at string, newID session.SessionID, opts AcquireOptions) (*Handle, error) {
	rec, err := st.LoadWith(ctx, from, LoadOptions{WithoutContent: true})
	if err != nil {
		return nil, err
	}
	n, ok := session.MessagePoint(rec.Snapshot.Messages, at)
	if !ok {
		return nil, fmt.Errorf("%w: message %q in session %s", ErrNotFound, at, from)
	}
	w, err := st.Fork(ctx, from, rec.Revision, newID, opts)
	if err != nil {
		return nil, err
	}
	h, err := Hold(ctx, w)
	if err != nil {
		return nil, err
	}
	if err := h.cutFork(ctx, n); err != nil {
		_ = w.Delete(context.WithoutCancel(ctx)) // a fork that is not at its message is not left behind
		return nil, err
	}
	return h, nil
}

// cutFork stores the fork's conversation cut at n messages, idle, with
// its relationship's ForkedAt and a title.
func (h *Handle) cutFork(ctx context.Context, n int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	snap := h.snap
	snap.Messages = snap.Messages[:n:n]
	snap.State, snap.Pending, snap.StopReason, snap.Permanent, snap.LastError = session.StateIdle, nil, "", false, ""
	if n > 0 {
		snap.Relationship.ForkedAt = session.MessageIDAt(snap.Messages, n-1)
	}
	if snap.Title == "" {
		for _, m := range snap.Messages {
			if t := session.TitleFromPrompt(textOf(m)); m.Role == session.RoleUser && t != "" {
				snap.Title, snap.TitleProvenance = t, session.TitleFirstPrompt
				break
			}
		}
	}
	s, err := snap.Restore()
	if err != nil {
		return fmt.Errorf("%w: session %s: %w", ErrInvalidSnapshot, snap.ID, err)
	}
	rev, err := h.w.Append(ctx, h.rev, snap)
	if err != nil {
		return err
	}
	h.s, h.snap, h.rev = s, snap, rev
	return nil
}

// Heartbeat proves the holder alive (Writer.Heartbeat).
func (h *Handle) Heartbeat(ctx context.Context) error { return h.w.Heartbeat(ctx) }

// Delete removes the session and releases the lease.
func (h *Handle) Delete(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.w.Delete(ctx)
}

// Close releases the lease cleanly (Writer.Release). Idempotent.
func (h *Handle) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.w.Release(ctx)
}

// storeLocked appends the aggregate as the next revision. On error the
// aggregate goes back to the stored revision.
func (h *Handle) storeLocked(ctx context.Context) (uint64, error) {
	snap, err := sessnap.Of(h.s)
	if err == nil {
		var rev uint64
		rev, err = h.w.Append(ctx, h.rev, snap)
		if err == nil {
			h.snap, h.rev = snap, rev
			return rev, nil
		}
	}
	h.rebuildLocked()
	return 0, err
}

// rebuildLocked puts the aggregate back to the stored revision, after a
// change that was not stored. It costs the session; it happens on refused
// input and failed writes only.
func (h *Handle) rebuildLocked() {
	s, err := h.snap.Restore()
	if err != nil {
		// The snapshot was stored, so it restores; if it ever does not,
		// the handle must not go on from a changed aggregate.
		h.s = nil
		return
	}
	h.s = s
}

// errBroken is what a handle whose aggregate could not be restored says:
// it is done, as a writer whose outcome is uncertain.
var errBroken = fmt.Errorf("%w: the session's latest revision no longer restores", ErrWriterFailed)

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// textOf returns m's first non-empty text.
func textOf(m session.Message) string {
	for _, p := range m.Parts {
		if p.Type == session.PartText && p.Text != "" {
			return p.Text
		}
	}
	return ""
}
