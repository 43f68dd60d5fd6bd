package session

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Config is what a session is created with. Its behavior (everything but
// the last three fields) cannot change afterwards: the Session keeps a
// private copy and exposes it only through accessors that return copies.
// Labels, Workspace and Origin are starting values of fields that change
// through their own methods under their own rules (SetLabel, SetWorkspace,
// SetOrigin); Config reports their current values.
type Config struct {
	ID          SessionID
	Incarnation IncarnationID
	CreatedAt   time.Time // required; stored as UTC
	Mode        PermissionMode
	Limits      Limits
	// Kind is the producer taxonomy; empty means KindUnknown.
	Kind         SessionKind
	Relationship SessionRelationship
	Profile      string
	ProviderID   string
	ModelID      string
	// ReasoningEffort is an opaque effort token ("" = unset).
	ReasoningEffort        string
	DebugMCPServers        []string
	DebugMCPTools          []string
	DebugTargetFingerprint string
	EnvironmentRef         EnvironmentRef // required, all three fields
	Placement              PlacementMetadata
	// Authority is the derived capability set; nil means none recorded
	// (legacy). A non-nil Authority must pass ValidateAuthority.
	Authority *Authority

	// Labels are the session's starting labels (see ValidateLabel).
	Labels map[string]string
	// Workspace is where the session starts; its Project never changes.
	Workspace Workspace
	// Origin records the source of an imported session; nil for a session
	// that was not imported.
	Origin *Origin
}

// Session is the aggregate: one agent conversation and its lifecycle. Its
// state is unexported so that the invariants hold: transitions go through
// the table in transitions.go, behavior chosen at creation is immutable, and
// the owner is written once. Accessors return copies.
//
// A Session is not safe for concurrent use.
type Session struct {
	cfg Config

	state        State
	conversation []Message
	counters     Counters
	usage        Usage
	pending      *PendingAsk
	stop         StopReason

	title           string
	titleProvenance TitleProvenance

	permanent        bool
	retryDisposition RetryDisposition
	streamProgress   StreamProgress

	retryPending            bool
	retryPendingDisposition RetryDisposition
	retryPendingProgress    StreamProgress

	lastError string
	runID     string
	owner     *Principal

	labels     map[string]string
	workspace  Workspace
	origin     *Origin
	messageIDs map[string]struct{} // the IDs in conversation, to keep them unique
	// longest is the most messages the conversation may have held: a
	// message appended below it may take the position of one dropped
	// (Truncate, or a rewind of a revision this Session was restored
	// from: MarkRestored), and gets an ID of its own.
	longest int

	totalsRestored bool
}

// New creates an idle session with the given behavior. It validates the
// configuration: a non-empty ID, a non-zero creation time, a complete
// environment reference, documented enumeration values (an empty mode means
// ModeDefault and an empty kind KindUnknown), non-negative limits and a
// canonical authority.
func New(cfg Config) (*Session, error) {
	if cfg.ID == "" {
		return nil, invalidf("empty session id")
	}
	if cfg.CreatedAt.IsZero() {
		return nil, invalidf("session %s: zero created_at", cfg.ID)
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeDefault
	}
	if !cfg.Mode.Valid() {
		return nil, invalidf("session %s: mode %q", cfg.ID, cfg.Mode)
	}
	if cfg.Kind == "" {
		cfg.Kind = KindUnknown
	}
	if !cfg.Kind.Valid() {
		return nil, invalidf("session %s: kind %q", cfg.ID, cfg.Kind)
	}
	if err := cfg.Limits.validate(); err != nil {
		return nil, err
	}
	if err := cfg.EnvironmentRef.Validate(); err != nil {
		return nil, err
	}
	if cfg.Authority != nil {
		if err := ValidateAuthority(*cfg.Authority); err != nil {
			return nil, err
		}
		a := cfg.Authority.clone()
		cfg.Authority = &a
	}
	if err := validateLabels(cfg.Labels); err != nil {
		return nil, err
	}
	if err := cfg.Workspace.validate(); err != nil {
		return nil, err
	}
	if cfg.Origin != nil {
		if err := cfg.Origin.Validate(); err != nil {
			return nil, err
		}
	}
	cfg.CreatedAt = cfg.CreatedAt.UTC()
	cfg.DebugMCPServers = slices.Clone(cfg.DebugMCPServers)
	cfg.DebugMCPTools = slices.Clone(cfg.DebugMCPTools)
	cfg.Placement = cfg.Placement.clone()
	s := &Session{
		cfg:              cfg,
		state:            StateIdle,
		retryDisposition: RetryUnknown,
		streamProgress:   ProgressUnknown,
		workspace:        cfg.Workspace,
		origin:           copyOf(cfg.Origin),
	}
	if len(cfg.Labels) > 0 {
		s.labels = maps.Clone(cfg.Labels)
	}
	// The mutable fields live in the Session alone, so that cfg holds
	// behavior only and Config cannot report stale values.
	s.cfg.Labels, s.cfg.Workspace, s.cfg.Origin = nil, Workspace{}, nil
	return s, nil
}

// Config returns a copy of the behavior fixed at creation, with the
// current labels, workspace and origin.
func (s *Session) Config() Config {
	c := s.cfg
	c.DebugMCPServers = slices.Clone(c.DebugMCPServers)
	c.DebugMCPTools = slices.Clone(c.DebugMCPTools)
	c.Placement = c.Placement.clone()
	if c.Authority != nil {
		a := c.Authority.clone()
		c.Authority = &a
	}
	c.Labels, c.Workspace, c.Origin = s.Labels(), s.workspace, s.Origin()
	return c
}

// ID returns the session's identifier.
func (s *Session) ID() SessionID { return s.cfg.ID }

// Incarnation returns the incarnation recorded at creation.
func (s *Session) Incarnation() IncarnationID { return s.cfg.Incarnation }

// CreatedAt returns the creation time (UTC).
func (s *Session) CreatedAt() time.Time { return s.cfg.CreatedAt }

// Mode returns the permission mode.
func (s *Session) Mode() PermissionMode { return s.cfg.Mode }

// Limits returns the limits.
func (s *Session) Limits() Limits { return s.cfg.Limits }

// Kind returns the producer kind.
func (s *Session) Kind() SessionKind { return s.cfg.Kind }

// Relationship returns the parent/root relationship.
func (s *Session) Relationship() SessionRelationship { return s.cfg.Relationship }

// EnvironmentRef returns the execution environment identity.
func (s *Session) EnvironmentRef() EnvironmentRef { return s.cfg.EnvironmentRef }

// Authority returns a copy of the capability set, or nil if none was
// recorded.
func (s *Session) Authority() *Authority { return s.Config().Authority }

// State returns the lifecycle state.
func (s *Session) State() State { return s.state }

// Conversation returns the messages, shared with the session: the
// conversation only grows and a message never changes once appended, so
// the session and every earlier result share one copy, and taking it costs
// nothing whatever its length. The caller must not modify the messages
// (Clone one to change it); appending to the returned slice never reaches
// the session (its capacity is its length).
func (s *Session) Conversation() []Message {
	return s.conversation[:len(s.conversation):len(s.conversation)]
}

// MessageCount returns the number of messages without copying them.
func (s *Session) MessageCount() int { return len(s.conversation) }

// Counters returns the running totals.
func (s *Session) Counters() Counters { return s.counters }

// Usage returns the cumulative token usage.
func (s *Session) Usage() Usage { return s.usage }

// PendingAsk returns the parked approval request. It is readable only while
// the session is awaiting; otherwise it returns ErrNoPendingAsk.
func (s *Session) PendingAsk() (PendingAsk, error) {
	if s.state != StateAwaiting || s.pending == nil {
		return PendingAsk{}, ErrNoPendingAsk
	}
	return s.pending.clone(), nil
}

// RecordedStopReason returns exactly the stop reason recorded by the
// terminal transition, with no derivation ("" if none).
func (s *Session) RecordedStopReason() StopReason { return s.stop }

// StopReason returns the recorded stop reason, or else a reason derived
// from the limits (turns, tool calls, run tokens) if one is exhausted, or
// "". Persisting code must use RecordedStopReason.
func (s *Session) StopReason() StopReason {
	if s.stop != "" {
		return s.stop
	}
	return s.LimitReached(time.Time{})
}

// LimitReached returns the first exhausted limit as a stop reason, or "".
// The duration limit is checked only when now is non-zero.
func (s *Session) LimitReached(now time.Time) StopReason {
	l := s.cfg.Limits
	switch {
	case l.MaxTurns > 0 && s.counters.Turns >= l.MaxTurns:
		return StopMaxTurns
	case l.MaxToolCalls > 0 && s.counters.ToolCalls >= l.MaxToolCalls:
		return StopMaxToolCalls
	case l.MaxRunTokens > 0 && s.usage.RunTokens() >= l.MaxRunTokens:
		return StopMaxRunTokens
	case l.MaxDurationMS > 0 && !now.IsZero() && now.Sub(s.cfg.CreatedAt) >= l.MaxDuration():
		return StopMaxDuration
	}
	return ""
}

// Title returns the human-readable label and where it came from.
func (s *Session) Title() (string, TitleProvenance) { return s.title, s.titleProvenance }

// Profile returns the tool-surface profile label ("" = default profile).
func (s *Session) Profile() string { return s.cfg.Profile }

// Provider returns the provider and model selector pair ("" = server
// default).
func (s *Session) Provider() (providerID, modelID string) { return s.cfg.ProviderID, s.cfg.ModelID }

// ReasoningEffort returns the opaque effort token.
func (s *Session) ReasoningEffort() string { return s.cfg.ReasoningEffort }

// Permanent reports whether a failure was flagged as permanent.
func (s *Session) Permanent() bool { return s.permanent }

// RetryFacts returns the typed terminal facts of a failed model stream.
func (s *Session) RetryFacts() (RetryDisposition, StreamProgress) {
	return s.retryDisposition, s.streamProgress
}

// RetryPending returns the persisted retry intent.
func (s *Session) RetryPending() (pending bool, d RetryDisposition, p StreamProgress) {
	return s.retryPending, s.retryPendingDisposition, s.retryPendingProgress
}

// LastError returns the recorded terminal failure cause.
func (s *Session) LastError() string { return s.lastError }

// RunID returns the identity of the run this session drives or last drove.
func (s *Session) RunID() string { return s.runID }

// Owner returns a copy of the principal the session is attributed to, or
// nil.
func (s *Session) Owner() *Principal { return copyOf(s.owner) }

// Workspace returns where the session's agent works now.
func (s *Session) Workspace() Workspace { return s.workspace }

// Origin returns a copy of the record of the source the session was
// imported from, or nil.
func (s *Session) Origin() *Origin { return copyOf(s.origin) }

// copyOf returns a pointer to a copy of *p, or nil.
func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// --- lifecycle events -----------------------------------------------------

// BeginTurn starts a turn: idle → running, counting the turn.
func (s *Session) BeginTurn() error {
	return s.apply(EventBeginTurn, func() { s.counters.Turns++ })
}

// EndTurn finishes a turn: running → idle.
func (s *Session) EndTurn() error { return s.apply(EventEndTurn, nil) }

// PauseForApproval parks the running turn on ask: running → awaiting.
func (s *Session) PauseForApproval(ask PendingAsk) error {
	if err := ask.validate(); err != nil {
		return err
	}
	ask = ask.clone()
	ask.AskedAt = ask.AskedAt.UTC()
	return s.apply(EventPause, func() { s.pending = &ask })
}

// ResolveApproval answers the pending ask and resumes: awaiting → running.
// An approval is counted.
func (s *Session) ResolveApproval(approved bool) error {
	return s.apply(EventResume, func() {
		s.pending = nil
		if approved {
			s.counters.Approvals++
		}
	})
}

// Complete finishes the session normally, recording StopCompleted.
func (s *Session) Complete() error {
	return s.apply(EventComplete, func() { s.terminate(StopCompleted) })
}

// Stop stops the session for reason, which must be user_stop or a limit
// (max_turns, max_tool_calls, max_run_tokens, max_duration).
func (s *Session) Stop(reason StopReason) error {
	if !reason.stopsState() {
		return invalidf("stop reason %q is not one Stop records", reason)
	}
	return s.apply(EventStop, func() { s.terminate(reason) })
}

// Cancel cancels the session, recording StopCancelled.
func (s *Session) Cancel() error {
	return s.apply(EventCancel, func() { s.terminate(StopCancelled) })
}

// Fail fails the session, recording StopError and cause as the last error
// (normalised to one line of at most MaxLastErrorRunes runes).
func (s *Session) Fail(cause string) error {
	return s.apply(EventFail, func() {
		s.terminate(StopError)
		s.lastError = NormalizeLastError(cause)
	})
}

func (s *Session) terminate(reason StopReason) {
	s.stop = reason
	s.pending = nil
	s.retryPending = false
	s.retryPendingDisposition = ""
	s.retryPendingProgress = ""
}

// --- activity within a lifecycle state -----------------------------------

// AppendMessage adds m (deep-copied) to the conversation. Terminal sessions
// accept no message. A message without an ID gets a new one
// (NewMessageID) when its position may have held another message before:
// one Truncate dropped, or, in a Session restored from a stored revision
// (MarkRestored), one an earlier revision held. Its position's ID
// (PositionID) named that message in the revisions before, so that the
// message's own ID keeps every ID naming one message in the session's
// history. A Session that only grew gives none: its messages read with
// their positions' IDs.
func (s *Session) AppendMessage(m Message) error {
	if s.state.Terminal() {
		return &TransitionError{Event: "append_message", From: s.state}
	}
	if err := m.Validate(); err != nil {
		return err
	}
	if m.ID != "" {
		if _, dup := s.messageIDs[m.ID]; dup {
			return invalidf("message id %q is already in the conversation", m.ID)
		}
	}
	m = m.Clone()
	if !m.CreatedAt.IsZero() {
		m.CreatedAt = m.CreatedAt.UTC()
	}
	if m.ID == "" && len(s.conversation) < s.longest {
		m.ID = NewMessageID()
	}
	s.conversation = append(s.conversation, m)
	s.longest = max(s.longest, len(s.conversation))
	if m.ID != "" {
		if s.messageIDs == nil {
			s.messageIDs = make(map[string]struct{})
		}
		s.messageIDs[m.ID] = struct{}{}
	}
	return nil
}

// Truncate keeps the conversation's first n messages and drops the rest
// (a rewind), their IDs free again. With endTurn, a turn running or
// paused for an approval ends (the session idle, the pending ask gone)
// and a terminal session is refused; without it the state stays as it
// is. The messages kept are not copied or validated again: its cost is
// the messages dropped. The conversation earlier Conversation results
// returned is unchanged (the next message is appended to a new copy).
func (s *Session) Truncate(n int, endTurn bool) error {
	if n < 0 || n > len(s.conversation) {
		return invalidf("session %s: no point at message %d (it holds %d)", s.cfg.ID, n, len(s.conversation))
	}
	if endTurn {
		switch {
		case s.state.Terminal():
			return &TransitionError{Event: "rewind", From: s.state}
		case s.state == StateRunning, s.state == StateAwaiting:
			s.state, s.pending = StateIdle, nil
		}
	}
	for _, m := range s.conversation[n:] {
		delete(s.messageIDs, m.ID)
	}
	s.longest = max(s.longest, len(s.conversation))
	s.conversation = s.conversation[:n:n]
	return nil
}

// RecordToolCall counts a tool call made by the running turn.
func (s *Session) RecordToolCall() error {
	if s.state != StateRunning {
		return &TransitionError{Event: "record_tool_call", From: s.state}
	}
	s.counters.ToolCalls++
	return nil
}

// AddUsage adds token usage spent by the running turn.
func (s *Session) AddUsage(u Usage) error {
	if s.state != StateRunning {
		return &TransitionError{Event: "add_usage", From: s.state}
	}
	if err := u.validate(); err != nil {
		return err
	}
	s.usage = s.usage.Add(u)
	return nil
}

// SetTitle sets the human-readable label. An empty title requires an empty
// provenance (no title). A title's provenance is one of the documented
// values, or empty for a title whose origin was not recorded (legacy data).
func (s *Session) SetTitle(title string, prov TitleProvenance) error {
	if title == "" && prov != "" || prov != "" && !prov.Valid() {
		return invalidf("title %q with provenance %q", title, prov)
	}
	s.title, s.titleProvenance = title, prov
	return nil
}

// SetWorkspace records where the session's agent works now: a new working
// directory or branch. The project is fixed once set: w.Project must equal
// the recorded one, or the recorded one must be empty (then w sets it);
// otherwise ErrImmutable and nothing changes. Allowed in every state.
func (s *Session) SetWorkspace(w Workspace) error {
	if err := w.validate(); err != nil {
		return err
	}
	if s.workspace.Project != "" && w.Project != s.workspace.Project {
		return fmt.Errorf("%w: workspace project already %q", ErrImmutable, s.workspace.Project)
	}
	s.workspace = w
	return nil
}

// SetOrigin records what an import of the session's source read. The
// source's identity (Tool, SessionID, AgentID) is fixed once recorded: a
// different one is ErrImmutable. A nil origin is refused once one is
// recorded (an imported session stays imported) and is a no-op otherwise.
func (s *Session) SetOrigin(o *Origin) error {
	if o == nil {
		if s.origin != nil {
			return fmt.Errorf("%w: origin already recorded", ErrImmutable)
		}
		return nil
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if s.origin != nil && !s.origin.sameSource(*o) {
		return fmt.Errorf("%w: origin already %s %q", ErrImmutable, s.origin.Tool, s.origin.SessionID)
	}
	s.origin = copyOf(o)
	return nil
}

// SetRunID records the identity of the run now driving the session.
func (s *Session) SetRunID(id string) error {
	if s.state.Terminal() {
		return &TransitionError{Event: "set_run_id", From: s.state}
	}
	s.runID = id
	return nil
}

// PrepareRetry records the intent to retry a failed step, so that it
// survives a crash before the retry completes. Only non-terminal sessions.
func (s *Session) PrepareRetry(d RetryDisposition, p StreamProgress) error {
	if s.state.Terminal() {
		return &TransitionError{Event: "prepare_retry", From: s.state}
	}
	if !d.Valid() || !p.Valid() {
		return invalidf("retry intent %q/%q", d, p)
	}
	s.retryPending, s.retryPendingDisposition, s.retryPendingProgress = true, d, p
	return nil
}

// ClearRetryPending forgets the retry intent.
func (s *Session) ClearRetryPending() {
	s.retryPending, s.retryPendingDisposition, s.retryPendingProgress = false, "", ""
}

// RecordFailurePermanence flags a failed session's failure as permanent or
// not. Only in StateFailed.
func (s *Session) RecordFailurePermanence(permanent bool) error {
	if s.state != StateFailed {
		return &TransitionError{Event: "record_failure_permanence", From: s.state}
	}
	s.permanent = permanent
	return nil
}

// RecordLastError replaces a failed session's failure cause. Only in
// StateFailed.
func (s *Session) RecordLastError(cause string) error {
	if s.state != StateFailed {
		return &TransitionError{Event: "record_last_error", From: s.state}
	}
	s.lastError = NormalizeLastError(cause)
	return nil
}

// RecordRetryFacts records the typed facts of a failed model stream. Only
// in StateFailed.
func (s *Session) RecordRetryFacts(d RetryDisposition, p StreamProgress) error {
	if s.state != StateFailed {
		return &TransitionError{Event: "record_retry_facts", From: s.state}
	}
	if !d.Valid() || !p.Valid() {
		return invalidf("retry facts %q/%q", d, p)
	}
	s.retryDisposition, s.streamProgress = d, p
	return nil
}

// --- restoration ----------------------------------------------------------

// RestoreLabels sets the write-once owner. A nil owner is a no-op; setting
// an owner when a different one is already recorded returns ErrImmutable.
func (s *Session) RestoreLabels(owner *Principal) error {
	if owner == nil {
		return nil
	}
	if owner.Subject == "" {
		return invalidf("owner without subject")
	}
	if s.owner != nil {
		if *s.owner == *owner {
			return nil
		}
		return fmt.Errorf("%w: owner already %q", ErrImmutable, s.owner.Subject)
	}
	o := *owner
	s.owner = &o
	return nil
}

// ReserveMessages makes room for n more messages, so that appending them
// (sessnap's Restore appends a stored conversation) grows the
// conversation and its index of IDs once.
func (s *Session) ReserveMessages(n int) {
	if n <= 0 {
		return
	}
	s.conversation = slices.Grow(s.conversation, n)
	if s.messageIDs == nil {
		s.messageIDs = make(map[string]struct{}, n)
	}
}

// MarkRestored records that s was rebuilt from a stored revision
// (sessnap's Restore calls it last): earlier revisions may have held more
// messages than its conversation (a rewind, a fork cut at a message), and
// s cannot know, so from then on every message appended without an ID
// gets one (AppendMessage). Messages appended before the call are as they
// were stored.
func (s *Session) MarkRestored() { s.longest = math.MaxInt }

// RestoreTotals seeds the running totals and cumulative usage of a session
// being rebuilt from persisted state. It may be called once per Session;
// it exists for rehydration (sessnap.RestoreState), which must keep the
// counters across the BeginTurn it replays.
func (s *Session) RestoreTotals(c Counters, u Usage) error {
	if s.totalsRestored {
		return fmt.Errorf("%w: totals already restored", ErrImmutable)
	}
	if err := c.validate(); err != nil {
		return err
	}
	if err := u.validate(); err != nil {
		return err
	}
	s.counters, s.usage, s.totalsRestored = c, u, true
	return nil
}

// MaxLastErrorRunes bounds a recorded failure cause.
const MaxLastErrorRunes = 1024

// NormalizeLastError makes cause one line of valid UTF-8 of at most
// MaxLastErrorRunes runes. It is idempotent.
func NormalizeLastError(cause string) string {
	cause = strings.ToValidUTF8(cause, "\uFFFD")
	cause = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, cause)
	cause = strings.TrimSpace(cause)
	if utf8.RuneCountInString(cause) > MaxLastErrorRunes {
		r := []rune(cause)
		cause = strings.TrimSpace(string(r[:MaxLastErrorRunes-1])) + "…"
	}
	return cause
}

// MaxTitleRunes bounds a title derived by TitleFromPrompt.
const MaxTitleRunes = 80

// TitleFromPrompt derives a title from a user prompt: its first non-empty
// line, trimmed and clamped to MaxTitleRunes runes.
func TitleFromPrompt(prompt string) string {
	for line := range strings.Lines(strings.ToValidUTF8(prompt, "\uFFFD")) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > MaxTitleRunes {
			r := []rune(line)
			line = strings.TrimSpace(string(r[:MaxTitleRunes-1])) + "…"
		}
		return line
	}
	return ""
}
