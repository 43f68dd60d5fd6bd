package session

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
	switch s {
	case StateIdle, StateRunning, StateAwaiting, StateCompleted, StateStopped, StateCancelled, StateFailed:
		return true
	}
	return false
}

// Terminal reports whether s accepts no further transition.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateStopped, StateCancelled, StateFailed:
		return true
	}
	return false
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
	switch k {
	case KindUnknown, KindPrimary, KindSubagent, KindScheduled, KindDebug:
		return true
	}
	return false
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
	switch m {
	case ModeDefault, ModePlan, ModeAcceptEdits, ModeBypass:
		return true
	}
	return false
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
	switch r {
	case StopCompleted, StopMaxTurns, StopMaxToolCalls, StopMaxRunTokens, StopMaxDuration,
		StopUserStop, StopCancelled, StopError:
		return true
	}
	return false
}

// stopsState reports whether r is a reason the Stop event records.
func (r StopReason) stopsState() bool {
	switch r {
	case StopMaxTurns, StopMaxToolCalls, StopMaxRunTokens, StopMaxDuration, StopUserStop:
		return true
	}
	return false
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
	switch d {
	case RetryUnknown, RetryRetryable, RetryNotRetryable:
		return true
	}
	return false
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
func (p StreamProgress) Valid() bool {
	switch p {
	case ProgressUnknown, ProgressNone, ProgressPartial:
		return true
	}
	return false
}

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
	switch p {
	case TitleFirstPrompt, TitleExplicit, TitleGenerated:
		return true
	}
	return false
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
func (r Role) Valid() bool {
	switch r {
	case RoleUser, RoleAssistant, RoleSystem, RoleTool:
		return true
	}
	return false
}

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
	switch t {
	case PartText, PartToolCall, PartToolResult, PartImage, PartBlob, PartReasoning:
		return true
	}
	return false
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
