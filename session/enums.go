package session

import "slices"

// This file holds the closed enumerations of the domain. Each is a
// lower-case string so that its persisted form is readable and stable; each
// has a Valid method that accepts exactly the documented values.

// SessionID identifies a session. The domain only requires it to be
// non-empty; stores impose their own syntax (see sessionstore.ValidateID).
type SessionID string

// IncarnationID identifies one incarnation of a session's execution (for
// example a process that hosted it). It is opaque to this package.
type IncarnationID string

// State is a lifecycle state. The transitions between states are the table
// in transitions.go.
type State string

// Lifecycle states.
const (
	StateIdle      State = "idle"      // created, or between turns
	StateRunning   State = "running"   // a turn is in progress
	StateAwaiting  State = "awaiting"  // a turn is parked on an approval (PendingAsk)
	StateCompleted State = "completed" // terminal: finished normally
	StateStopped   State = "stopped"   // terminal: stopped by the user or a limit
	StateCancelled State = "cancelled" // terminal: cancelled
	StateFailed    State = "failed"    // terminal: failed (LastError, Permanent)
)

// States lists every lifecycle state in declaration order.
var States = []State{StateIdle, StateRunning, StateAwaiting, StateCompleted, StateStopped, StateCancelled, StateFailed}

// Valid reports whether s is one of the lifecycle states.
func (s State) Valid() bool {
	return oneOf(s, StateIdle, StateRunning, StateAwaiting, StateCompleted, StateStopped, StateCancelled, StateFailed)
}

// Terminal reports whether s accepts no further transition.
func (s State) Terminal() bool {
	return oneOf(s, StateCompleted, StateStopped, StateCancelled, StateFailed)
}

// SessionKind is the producer taxonomy: who created the session and why.
type SessionKind string

// Session kinds. A missing kind in persisted data is legacy and means
// KindUnknown, which grants nothing (fail-closed).
const (
	KindUnknown   SessionKind = "unknown"
	KindPrimary   SessionKind = "primary"
	KindSubagent  SessionKind = "subagent"
	KindScheduled SessionKind = "scheduled"
	KindDebug     SessionKind = "debug"
)

// Valid reports whether k is a documented kind.
func (k SessionKind) Valid() bool {
	return oneOf(k, KindUnknown, KindPrimary, KindSubagent, KindScheduled, KindDebug)
}

// PermissionMode is the tool-permission mode chosen at creation.
type PermissionMode string

// Permission modes.
const (
	ModeDefault     PermissionMode = "default"
	ModePlan        PermissionMode = "plan"
	ModeAcceptEdits PermissionMode = "accept_edits"
	ModeBypass      PermissionMode = "bypass"
)

// Valid reports whether m is a documented mode.
func (m PermissionMode) Valid() bool {
	return oneOf(m, ModeDefault, ModePlan, ModeAcceptEdits, ModeBypass)
}

// StopReason says why a session reached a terminal state. The empty value
// means "none recorded".
type StopReason string

// Stop reasons.
const (
	StopCompleted    StopReason = "completed"
	StopMaxTurns     StopReason = "max_turns"
	StopMaxToolCalls StopReason = "max_tool_calls"
	StopMaxRunTokens StopReason = "max_run_tokens" //nolint:gosec // G101: a stop reason that names a token budget, not a credential
	StopMaxDuration  StopReason = "max_duration"
	StopUserStop     StopReason = "user_stop"
	StopCancelled    StopReason = "cancelled"
	StopError        StopReason = "error"
)

// Valid reports whether r is a documented stop reason (the empty value is
// not one; it means none).
func (r StopReason) Valid() bool {
	return oneOf(r, StopCompleted, StopMaxTurns, StopMaxToolCalls, StopMaxRunTokens, StopMaxDuration, StopUserStop, StopCancelled, StopError)
}

// stopsState reports whether r is a reason the Stop event records.
func (r StopReason) stopsState() bool {
	return oneOf(r, StopMaxTurns, StopMaxToolCalls, StopMaxRunTokens, StopMaxDuration, StopUserStop)
}

// RetryDisposition classifies whether a failed model stream may be retried.
type RetryDisposition string

// Retry dispositions. Missing persisted values mean RetryUnknown.
const (
	RetryUnknown      RetryDisposition = "unknown"
	RetryRetryable    RetryDisposition = "retryable"
	RetryNotRetryable RetryDisposition = "not_retryable"
)

// Valid reports whether d is a documented disposition.
func (d RetryDisposition) Valid() bool {
	return oneOf(d, RetryUnknown, RetryRetryable, RetryNotRetryable)
}

// StreamProgress says how far a failed model stream got before failing.
type StreamProgress string

// Stream progress values. Missing persisted values mean ProgressUnknown.
const (
	ProgressUnknown StreamProgress = "unknown"
	ProgressNone    StreamProgress = "none"
	ProgressPartial StreamProgress = "partial"
)

// Valid reports whether p is a documented progress value.
func (p StreamProgress) Valid() bool { return oneOf(p, ProgressUnknown, ProgressNone, ProgressPartial) }

// TitleProvenance says where a session's title came from. The empty value
// means the session has no title.
type TitleProvenance string

// Title provenances.
const (
	TitleFirstPrompt TitleProvenance = "first_prompt"
	TitleExplicit    TitleProvenance = "explicit"
	TitleGenerated   TitleProvenance = "generated"
)

// Valid reports whether p is a documented provenance.
func (p TitleProvenance) Valid() bool {
	return oneOf(p, TitleFirstPrompt, TitleExplicit, TitleGenerated)
}

// Role is the author of a message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// Valid reports whether r is a documented role.
func (r Role) Valid() bool { return oneOf(r, RoleUser, RoleAssistant, RoleSystem, RoleTool) }

// PartType is the type of one part of a message.
type PartType string

// Part types.
const (
	PartText       PartType = "text"
	PartToolCall   PartType = "tool_call"
	PartToolResult PartType = "tool_result"
	PartImage      PartType = "image"
	PartBlob       PartType = "blob"
	// PartReasoning is the model's reasoning ("thinking"): readable text,
	// opaque encrypted content, or both, with the provider's signature.
	PartReasoning PartType = "reasoning"
)

// Valid reports whether t is a documented part type.
func (t PartType) Valid() bool {
	return oneOf(t, PartText, PartToolCall, PartToolResult, PartImage, PartBlob, PartReasoning)
}

// CompactionTrigger says what started a compaction. The empty value means
// not recorded.
type CompactionTrigger string

// Compaction triggers.
const (
	CompactionAuto   CompactionTrigger = "auto"   // the runtime compacted a context that grew too large
	CompactionManual CompactionTrigger = "manual" // a person asked for it
)

// Valid reports whether t is a documented trigger (the empty value is not
// one; it means not recorded).
func (t CompactionTrigger) Valid() bool { return t == CompactionAuto || t == CompactionManual }

// oneOf reports whether v is one of set: the body of every Valid and
// predicate method above, so that each lists its values and nothing else.
func oneOf[T comparable](v T, set ...T) bool { return slices.Contains(set, v) }
