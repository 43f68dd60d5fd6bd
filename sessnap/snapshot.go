package sessnap

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// Format is the format tag written into every snapshot. It changes only on
// an incompatible change of the snapshot's shape; additive fields keep it
// and raise SchemaVersion instead.
const Format = "sessnap/v1"

// SchemaVersion is the codec's schema version. It increases with every
// field added to the snapshot (or to a nested shape), even when Format does
// not change. Stores record it with every revision, and a writer refuses to
// append to a session whose latest revision carries a higher version: reads
// are forward compatible, writes are not, so an older program never drops a
// newer program's fields.
//
// History:
//
//	1  the fields of Snapshot as first released
const SchemaVersion = 1

// Snapshot is the on-the-wire form of a session.Session. It is a plain data struct with JSON tags so it serializes deterministically regardless of the (untagged) layout of the domain types.
//
// Omitted keys decode to documented defaults, which are part of the
// compatibility contract: a missing format is a legacy v1 snapshot; a
// missing mode is "default"; a missing kind is "unknown" (fail-closed); a
// missing usage is zero; a missing owner is none; a missing authority is a
// legacy record without one (a present authority must validate); missing
// retry facts are "unknown"; a missing messages array is an empty
// conversation. A missing or incomplete environment_ref, id or created_at
// fails. Unknown keys (from a newer writer) are ignored.
type Snapshot struct {
	// Format is the format tag (Format). Empty in legacy snapshots.
	Format string `json:"format,omitempty"`

	ID          session.SessionID      `json:"id"`
	State       session.State          `json:"state"`
	Mode        session.PermissionMode `json:"mode"`
	Limits      session.Limits         `json:"limits"`
	Counters    session.Counters       `json:"counters"`
	CreatedAt   time.Time              `json:"created_at"`
	Incarnation session.IncarnationID  `json:"incarnation,omitempty"`
	Messages    []messageDTO           `json:"messages"`
	Pending     *session.PendingAsk    `json:"pending,omitempty"`
	StopReason  session.StopReason     `json:"stop_reason,omitempty"`
	// Kind and Relationship are the validated producer taxonomy from ADR 0217.
	// A missing kind is legacy data and restores as unknown (fail-closed).
	Kind         session.SessionKind         `json:"kind,omitempty"`
	Relationship session.SessionRelationship `json:"relationship,omitzero"`
	// Profile is the session's opaque tool-surface profile label. omitempty keeps a
	// v1 snapshot with no "profile" key decoding to "" (the default profile) —
	// purely additive, no format-tag bump (the same precedent as ProviderPhase /
	// Parts).
	Profile string `json:"profile,omitempty"`
	// ProviderID and ModelID are the session's opaque neutral provider+model
	// selector pair. omitempty keeps a v1 snapshot with no key decoding to the empty
	// pair ("server default") — additive, no version bump. Persisting them lets a
	// restarted process re-derive the SAME per-session engine via the factory.
	ProviderID string `json:"provider_id,omitempty"`
	ModelID    string `json:"model_id,omitempty"`
	// ReasoningEffort is the session's opaque neutral reasoning-effort token (ADR
	// 0055). omitempty keeps a pre-0055 snapshot with no key decoding to "" (unset)
	// — additive, no version bump. Persisting it lets a restarted process re-mint the
	// SAME per-session engine (the same-effort adapter) via the factory.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// DebugMCPServers names only the configured server-global MCP servers selected
	// for a debug session. DebugMCPTools is the exact direct-tool ceiling captured
	// at creation; neither field contains URLs, headers, or connection details.
	DebugMCPServers []string `json:"debug_mcp_servers,omitempty"`
	DebugMCPTools   []string `json:"debug_mcp_tools,omitempty"`
	// DebugTargetFingerprint is the non-projectable target-incarnation binding.
	DebugTargetFingerprint string `json:"debug_target_fingerprint,omitempty"`
	// Title is the session's human-readable label seeded from the first genuine
	// user prompt. omitempty keeps a pre-Title snapshot with no "title" key
	// decoding to "" — additive, no format-tag bump (the same precedent as
	// Profile / ProviderID / Parts). Persisting it lets a restarted process show
	// the label without re-deriving it. It is an inert stored label (like
	// Profile), restored by direct assignment, NOT a state transition.
	Title           string                  `json:"title,omitempty"`
	TitleProvenance session.TitleProvenance `json:"title_provenance,omitempty"`
	// Usage is the cumulative run-token accounting, a POINTER for true omitempty
	// (matching the Pending precedent): a zero Usage marshals nothing and a v1
	// snapshot with no "usage" key decodes to a nil pointer => the zero Usage on
	// restore. It is what the MaxRunTokens budget brake is evaluated against, so
	// persisting it lets the budget survive restart.
	Usage *session.Usage `json:"usage,omitempty"`
	// Permanent records whether a StateFailed session's failure was flagged as
	// permanent (session.RecordFailurePermanence). omitempty keeps a pre-flag
	// snapshot with no "permanent" key decoding to false — purely additive, no
	// format-tag bump.
	Permanent bool `json:"permanent,omitempty"`
	// RetryDisposition and StreamProgress are the typed terminal facts for a failed
	// model stream. Missing legacy fields decode conservatively to unknown.
	RetryDisposition session.RetryDisposition `json:"retry_disposition,omitempty"`
	StreamProgress   session.StreamProgress   `json:"stream_progress,omitempty"`
	// RetryPending persists the consumed failed-step retry intent across the crash window
	// between preparation and terminal completion. Its metadata remains separate
	// from failed-state metadata because the prepared aggregate is idle/running.
	RetryPending            bool                     `json:"retry_pending,omitempty"`
	RetryPendingDisposition session.RetryDisposition `json:"retry_pending_disposition,omitempty"`
	RetryPendingProgress    session.StreamProgress   `json:"retry_pending_progress,omitempty"`
	// LastError records a StateFailed session's terminal failure CAUSE
	// (session.RecordLastError, the Permanent-analog for the failure detail).
	// omitempty keeps a pre-#332 snapshot with no "last_error" key decoding to ""
	// — purely additive, no format-tag bump (the same precedent as Permanent). It
	// is normalised at stamp time (one line, rune-clamped), mirroring the
	// event-side subagentCausePayload so the snapshot and the subagent.end event
	// carry the same persisted cause.
	LastError string `json:"last_error,omitempty"`
	// RunID is the opaque, host-minted identity of the run this session is
	// currently driving or most recently drove (ADR 0249). Persisting it is what
	// makes an awaiting-approval resume continue THE SAME run across a process
	// restart: the resume path reads it back and reuses it instead of minting a
	// new one.
	//
	// omitempty keeps a pre-0245 snapshot with no "run_id" key decoding to "" —
	// purely additive, no format-tag bump (the Profile/ProviderID/Usage
	// precedent). A legacy session restores with no run id and is stamped on its
	// next run; there is no migration sweep.
	RunID string `json:"run_id,omitempty"`
	// Owner is the verified caller the session is attributed to (ADR 0204). A
	// POINTER for true omitempty: an ownerless session emits no "owner" key, so a
	// pre-ship snapshot decodes to a nil owner and an ownerless snapshot stays
	// byte-identical to a pre-ship one — purely additive, no format-tag bump.
	// Restored via the write-once aggregate method Session.RestoreLabels, NOT a
	// RestoreState parameter (widening that signature would be a Changed/breaking
	// entry under engine/COMPATIBILITY.md; a direct-assignment field is
	// Added/minor).
	Owner *session.Principal `json:"owner,omitempty"`
	// Authority is the plain, derived capability payload. A nil pointer is a
	// genuinely pre-feature legacy record; a present payload must decode to the
	// one governance.CapabilitySet representation or restore fails closed.
	Authority *session.Authority `json:"authority,omitempty"`
	// EnvironmentRef is the sole durable execution-environment identity. It is
	// required and must contain the exact provider revision used for reattachment.
	EnvironmentRef session.EnvironmentRef `json:"environment_ref"`
	// Placement is safe display-only metadata and is never used for reattachment.
	Placement session.PlacementMetadata `json:"placement,omitempty"`
}

// messageDTO is the persisted form of a session.Message:
//
//	{"role": "user"|"assistant"|"system"|"tool", "parts": [part…],
//	 "provider_phase"?: str, "created_at"?: time}
type messageDTO struct {
	Role          session.Role `json:"role"`
	Parts         []partDTO    `json:"parts"`
	ProviderPhase string       `json:"provider_phase,omitempty"`
	CreatedAt     time.Time    `json:"created_at,omitzero"`
}

// partDTO is the persisted form of a session.Part. Data is base64 (the
// encoding/json rule for []byte); binary content never goes in a string.
type partDTO struct {
	Type       session.PartType `json:"type"`
	Text       string           `json:"text,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	Name       string           `json:"name,omitempty"`
	Input      json.RawMessage  `json:"input,omitempty"`
	Output     string           `json:"output,omitempty"`
	IsError    bool             `json:"is_error,omitempty"`
	MediaType  string           `json:"media_type,omitempty"`
	Data       []byte           `json:"data,omitempty"`
}

// Of captures s as a Snapshot. The snapshot shares no memory with s.
func Of(s *session.Session) (Snapshot, error) {
	if s == nil {
		return Snapshot{}, ErrNilSession
	}
	cfg := s.Config()
	snap := Snapshot{
		Format:                 Format,
		ID:                     s.ID(),
		State:                  s.State(),
		Mode:                   cfg.Mode,
		Limits:                 cfg.Limits,
		Counters:               s.Counters(),
		CreatedAt:              cfg.CreatedAt,
		Incarnation:            cfg.Incarnation,
		Messages:               messagesOf(s.Conversation()),
		StopReason:             s.RecordedStopReason(),
		Kind:                   omitUnknown(cfg.Kind, session.KindUnknown),
		Relationship:           cfg.Relationship,
		Profile:                cfg.Profile,
		ProviderID:             cfg.ProviderID,
		ModelID:                cfg.ModelID,
		ReasoningEffort:        cfg.ReasoningEffort,
		DebugMCPServers:        cfg.DebugMCPServers,
		DebugMCPTools:          cfg.DebugMCPTools,
		DebugTargetFingerprint: cfg.DebugTargetFingerprint,
		Permanent:              s.Permanent(),
		LastError:              s.LastError(),
		RunID:                  s.RunID(),
		Owner:                  s.Owner(),
		Authority:              cfg.Authority,
		EnvironmentRef:         cfg.EnvironmentRef,
		Placement:              cfg.Placement,
	}
	if ask, err := s.PendingAsk(); err == nil {
		snap.Pending = &ask
	}
	snap.Title, snap.TitleProvenance = s.Title()
	if u := s.Usage(); !u.IsZero() {
		snap.Usage = &u
	}
	d, p := s.RetryFacts()
	snap.RetryDisposition = omitUnknown(d, session.RetryUnknown)
	snap.StreamProgress = omitUnknown(p, session.ProgressUnknown)
	if pending, d, p := s.RetryPending(); pending {
		snap.RetryPending = true
		snap.RetryPendingDisposition = omitUnknown(d, session.RetryUnknown)
		snap.RetryPendingProgress = omitUnknown(p, session.ProgressUnknown)
	}
	return snap, nil
}

// omitUnknown maps an enumeration's "unknown" value to the empty string, so
// that it is omitted on the wire; a missing key decodes back to unknown.
func omitUnknown[T ~string](v, unknown T) T {
	if v == unknown {
		return ""
	}
	return v
}

func orUnknown[T ~string](v, unknown T) T {
	if v == "" {
		return unknown
	}
	return v
}

func messagesOf(msgs []session.Message) []messageDTO {
	out := make([]messageDTO, len(msgs))
	for i, m := range msgs {
		parts := make([]partDTO, len(m.Parts))
		for j, p := range m.Parts {
			parts[j] = partDTO{
				Type: p.Type, Text: p.Text, ToolCallID: p.ToolCallID, Name: p.Name,
				Input: p.Input, Output: p.Output, IsError: p.IsError,
				MediaType: p.MediaType, Data: p.Data,
			}
		}
		out[i] = messageDTO{Role: m.Role, Parts: parts, ProviderPhase: m.ProviderPhase, CreatedAt: m.CreatedAt}
	}
	return out
}

func (m messageDTO) message() session.Message {
	parts := make([]session.Part, len(m.Parts))
	for j, p := range m.Parts {
		parts[j] = session.Part{
			Type: p.Type, Text: p.Text, ToolCallID: p.ToolCallID, Name: p.Name,
			Input: slices.Clone(p.Input), Output: p.Output, IsError: p.IsError,
			MediaType: p.MediaType, Data: slices.Clone(p.Data),
		}
	}
	return session.Message{Role: m.Role, Parts: parts, ProviderPhase: m.ProviderPhase, CreatedAt: m.CreatedAt}
}

// Restore rebuilds an equivalent Session from the snapshot. It validates
// everything a hostile or damaged snapshot could get wrong and fails with
// an error naming the problem; it never substitutes a default for a value
// that is present but invalid. It never rewrites IDs or history.
func (snap Snapshot) Restore() (*session.Session, error) {
	if snap.Format != "" && snap.Format != Format {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedFormat, snap.Format)
	}
	if snap.ID == "" {
		return nil, fmt.Errorf("%w: missing id", ErrInvalid)
	}
	if err := snap.EnvironmentRef.Validate(); err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", ErrInvalidEnvironmentRef, snap.ID, err)
	}
	if snap.Authority != nil {
		if err := ValidatePersistedAuthority(snap.Authority); err != nil {
			return nil, fmt.Errorf("session %s: %w", snap.ID, err)
		}
	}
	if snap.CreatedAt.IsZero() {
		return nil, fmt.Errorf("%w: session %s: missing created_at", ErrInvalid, snap.ID)
	}
	if snap.Kind == session.KindUnknown {
		// "unknown" is never written (Of omits it) but is a legal spelling.
		snap.Kind = ""
	}
	s, err := session.New(session.Config{
		ID:                     snap.ID,
		Incarnation:            snap.Incarnation,
		CreatedAt:              snap.CreatedAt,
		Mode:                   snap.Mode,
		Limits:                 snap.Limits,
		Kind:                   snap.Kind,
		Relationship:           snap.Relationship,
		Profile:                snap.Profile,
		ProviderID:             snap.ProviderID,
		ModelID:                snap.ModelID,
		ReasoningEffort:        snap.ReasoningEffort,
		DebugMCPServers:        snap.DebugMCPServers,
		DebugMCPTools:          snap.DebugMCPTools,
		DebugTargetFingerprint: snap.DebugTargetFingerprint,
		EnvironmentRef:         snap.EnvironmentRef,
		Placement:              snap.Placement,
		Authority:              snap.Authority,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for i, m := range snap.Messages {
		if err := s.AppendMessage(m.message()); err != nil {
			return nil, fmt.Errorf("%w: session %s: message %d: %w", ErrInvalid, snap.ID, i, err)
		}
	}
	if err := s.SetTitle(snap.Title, snap.TitleProvenance); err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", ErrInvalid, snap.ID, err)
	}
	if err := s.RestoreLabels(snap.Owner); err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", ErrInvalid, snap.ID, err)
	}
	if err := s.SetRunID(snap.RunID); err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", ErrInvalid, snap.ID, err)
	}
	if snap.RetryPending {
		if snap.State.Terminal() {
			return nil, fmt.Errorf("%w: session %s: retry_pending on terminal state %s", ErrInvalid, snap.ID, snap.State)
		}
		err := s.PrepareRetry(orUnknown(snap.RetryPendingDisposition, session.RetryUnknown),
			orUnknown(snap.RetryPendingProgress, session.ProgressUnknown))
		if err != nil {
			return nil, fmt.Errorf("%w: session %s: %w", ErrInvalid, snap.ID, err)
		}
	} else if snap.RetryPendingDisposition != "" || snap.RetryPendingProgress != "" {
		return nil, fmt.Errorf("%w: session %s: retry_pending metadata without retry_pending", ErrInvalid, snap.ID)
	}
	pending := snap.Pending
	if pending != nil && string(pending.Input) == "null" {
		p := *pending
		p.Input = nil
		pending = &p
	}
	var usage session.Usage
	if snap.Usage != nil {
		usage = *snap.Usage
	}
	if err := RestoreState(s, snap.State, snap.StopReason, pending, snap.Counters, usage, snap.Permanent, snap.LastError); err != nil {
		return nil, fmt.Errorf("session %s: %w", snap.ID, err)
	}
	d := orUnknown(snap.RetryDisposition, session.RetryUnknown)
	p := orUnknown(snap.StreamProgress, session.ProgressUnknown)
	if snap.State == session.StateFailed {
		if err := s.RecordRetryFacts(d, p); err != nil {
			return nil, fmt.Errorf("%w: session %s: %w", ErrInvalid, snap.ID, err)
		}
	} else if d != session.RetryUnknown || p != session.ProgressUnknown {
		return nil, fmt.Errorf("%w: session %s: retry facts on non-failed state %s", ErrInvalid, snap.ID, snap.State)
	}
	return s, nil
}
