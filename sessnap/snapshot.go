package sessnap

import (
	"encoding/json"
	"fmt"
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
//	2  labels, workspace, origin; relationship.tool_call_id; message id,
//	   response_id, model, usage, injected, error, compaction; part type
//	   reasoning and part url, signature, encrypted, provider_executed,
//	   content, result
//	3  part blob: content kept out of line (session.ContentRef)
//	4  relationship.forked_at: the message a fork at a message was taken at
const SchemaVersion = 4

// Snapshot is the on-the-wire form of a session.Session. It is a plain
// data struct with JSON tags so it serializes deterministically regardless
// of the (untagged) layout of the domain types.
//
// Omitted keys decode to documented defaults, which are part of the
// compatibility contract: a missing format is a legacy v1 snapshot; a
// missing mode is "default"; a missing kind is "unknown" (fail-closed); a
// missing usage is zero; a missing owner is none; a missing authority is a
// legacy record without one (a present authority must validate); missing
// retry facts are "unknown"; a missing messages array is an empty
// conversation; missing labels are none; a missing workspace is an empty
// one; a missing origin means the session was not imported. A missing or
// incomplete environment_ref, id or created_at fails. Unknown keys (from a
// newer writer) are ignored.
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
	// Messages is the conversation, shared with the session Of took it
	// from (see Messages): read-only.
	Messages   Messages            `json:"messages"`
	Pending    *session.PendingAsk `json:"pending,omitempty"`
	StopReason session.StopReason  `json:"stop_reason,omitempty"`
	// Kind and Relationship are the validated producer taxonomy. A missing
	// kind is legacy data and restores as unknown (fail-closed). A missing
	// relationship, or a missing key in it, is empty.
	Kind         session.SessionKind         `json:"kind,omitempty"`
	Relationship session.SessionRelationship `json:"relationship,omitzero"`
	// Profile is the session's opaque tool-surface profile label. A missing
	// key decodes to "" (the default profile).
	Profile string `json:"profile,omitempty"`
	// ProviderID and ModelID are the session's opaque neutral provider and
	// model selector pair. Missing keys decode to the empty pair ("server
	// default"). Persisting them lets a restarted process rebuild the same
	// per-session engine.
	ProviderID string `json:"provider_id,omitempty"`
	ModelID    string `json:"model_id,omitempty"`
	// ReasoningEffort is the session's opaque neutral reasoning-effort
	// token. A missing key decodes to "" (unset). Persisting it lets a
	// restarted process rebuild the same per-session engine, with the same
	// effort.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// DebugMCPServers names only the configured server-global MCP servers selected
	// for a debug session. DebugMCPTools is the exact direct-tool ceiling captured
	// at creation; neither field contains URLs, headers, or connection details.
	DebugMCPServers []string `json:"debug_mcp_servers,omitempty"`
	DebugMCPTools   []string `json:"debug_mcp_tools,omitempty"`
	// DebugTargetFingerprint binds a debug session to the incarnation of
	// its target; it is never shown in summaries.
	DebugTargetFingerprint string `json:"debug_target_fingerprint,omitempty"`
	// Title is the session's human-readable label, seeded from the first
	// genuine user prompt unless set otherwise (TitleProvenance says how).
	// A missing key decodes to "" (no title). Persisting it lets a
	// restarted process show the label without deriving it again. It is a
	// stored label restored by assignment, not a state transition.
	Title           string                  `json:"title,omitempty"`
	TitleProvenance session.TitleProvenance `json:"title_provenance,omitempty"`
	// Usage is the cumulative run-token accounting. It is a pointer so that
	// a zero usage marshals nothing; a missing key restores as zero usage.
	// It is what the MaxRunTokens budget brake is evaluated against, so
	// persisting it lets the budget survive a restart.
	Usage *session.Usage `json:"usage,omitempty"`
	// Permanent records whether a StateFailed session's failure was flagged
	// as permanent (session.RecordFailurePermanence). A missing key decodes
	// to false.
	Permanent bool `json:"permanent,omitempty"`
	// RetryDisposition and StreamProgress are the typed terminal facts for a failed
	// model stream. Missing legacy fields decode conservatively to unknown.
	RetryDisposition session.RetryDisposition `json:"retry_disposition,omitempty"`
	StreamProgress   session.StreamProgress   `json:"stream_progress,omitempty"`
	// RetryPending persists the intent to retry a failed step across a
	// crash between preparing the retry and finishing it. Its facts are kept
	// apart from the failed state's, because the prepared session is idle
	// or running, not failed.
	RetryPending            bool                     `json:"retry_pending,omitempty"`
	RetryPendingDisposition session.RetryDisposition `json:"retry_pending_disposition,omitempty"`
	RetryPendingProgress    session.StreamProgress   `json:"retry_pending_progress,omitempty"`
	// LastError records a StateFailed session's terminal failure cause
	// (session.RecordLastError, the counterpart of Permanent for the
	// failure's detail). A missing key decodes to "". It is normalised when
	// recorded (one line, clamped to session.MaxLastErrorRunes runes), so
	// every reader shows the same cause.
	LastError string `json:"last_error,omitempty"`
	// RunID is the opaque, host-minted identity of the run this session is
	// currently driving or most recently drove. Persisting it is what makes
	// an awaiting-approval resume continue the same run across a process
	// restart: the resume path reads it back and reuses it instead of
	// minting a new one.
	//
	// A missing key decodes to "": a session without one restores with no
	// run id and is stamped on its next run; there is no migration sweep.
	RunID string `json:"run_id,omitempty"`
	// Owner is the verified caller the session is attributed to. It is a
	// pointer so that an ownerless session emits no "owner" key: a missing
	// key decodes to no owner. It is restored through the write-once
	// Session.RestoreLabels, not through RestoreState, whose signature stays
	// as it is.
	Owner *session.Principal `json:"owner,omitempty"`
	// Authority is the plain, derived capability payload. A nil pointer is
	// a legacy record without one; a present payload must be in its one
	// canonical representation (session.ValidateAuthority) or restore fails
	// closed.
	Authority *session.Authority `json:"authority,omitempty"`
	// EnvironmentRef is the sole durable execution-environment identity. It is
	// required and must contain the exact provider revision used for reattachment.
	EnvironmentRef session.EnvironmentRef `json:"environment_ref"`
	// Placement is safe display-only metadata and is never used for reattachment.
	Placement session.PlacementMetadata `json:"placement,omitempty"`

	// Labels are the session's mutable labels (session.ValidateLabel bounds
	// them); omitted when there are none, and a missing key is none.
	Labels map[string]string `json:"labels,omitempty"`
	// Workspace is the session's project root, working directory and git
	// branch; omitted when all are empty, and a missing key is an empty
	// workspace.
	Workspace session.Workspace `json:"workspace,omitzero"`
	// Origin records the source of an imported session (another tool's
	// transcript); a missing key means the session was not imported. A
	// present origin must name its tool and source session.
	Origin *session.Origin `json:"origin,omitempty"`
}

// messageDTO is the persisted form of a session.Message (see the package
// documentation for the shape). Every key that schema 2 adds is omitted
// when empty, so a message without them encodes as in schema 1.
type messageDTO struct {
	ID            string       `json:"id,omitempty"`
	Role          session.Role `json:"role"`
	Parts         []partDTO    `json:"parts"`
	ProviderPhase string       `json:"provider_phase,omitempty"`
	CreatedAt     time.Time    `json:"created_at,omitzero"`

	ResponseID string              `json:"response_id,omitempty"`
	Model      string              `json:"model,omitempty"`
	Usage      *session.Usage      `json:"usage,omitempty"`
	Injected   bool                `json:"injected,omitempty"`
	Error      string              `json:"error,omitempty"`
	Compaction *session.Compaction `json:"compaction,omitempty"`
}

// partDTO is the persisted form of a session.Part. Data is base64 (the
// encoding/json rule for []byte); binary content never goes in a string.
// Blob (schema 3) stands for content kept out of line: the field it names
// is then absent.
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

	URL              string          `json:"url,omitempty"`
	Signature        string          `json:"signature,omitempty"`
	Encrypted        string          `json:"encrypted,omitempty"`
	ProviderExecuted bool            `json:"provider_executed,omitempty"`
	Content          []partDTO       `json:"content,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`

	Blob *blobDTO `json:"blob,omitempty"`
}

// blobDTO is a session.ContentRef on the wire.
type blobDTO struct {
	Of     string `json:"of"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Of captures s as a Snapshot. The conversation is shared, not copied
// (Session.Conversation): taking a snapshot costs the same however long
// the conversation; its messages are read-only. Every other field is the
// snapshot's own.
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
		Messages:               Messages(s.Conversation()),
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
		Labels:                 cfg.Labels,
		Workspace:              cfg.Workspace,
		Origin:                 cfg.Origin,
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

// dtoOf converts m for encoding; the DTO shares m's slices and pointers.
func dtoOf(m session.Message) messageDTO {
	return messageDTO{
		ID: m.ID, Role: m.Role, Parts: partsOf(m.Parts), ProviderPhase: m.ProviderPhase, CreatedAt: m.CreatedAt,
		ResponseID: m.ResponseID, Model: m.Model, Usage: m.Usage, Injected: m.Injected, Error: m.Error,
		Compaction: m.Compaction,
	}
}

func partsOf(ps []session.Part) []partDTO {
	if ps == nil {
		return nil
	}
	out := make([]partDTO, len(ps))
	for j, p := range ps {
		out[j] = partDTO{
			Type: p.Type, Text: p.Text, ToolCallID: p.ToolCallID, Name: p.Name,
			Input: p.Input, Output: p.Output, IsError: p.IsError,
			MediaType: p.MediaType, Data: p.Data,
			URL: p.URL, Signature: p.Signature, Encrypted: p.Encrypted, ProviderExecuted: p.ProviderExecuted,
			Content: partsOf(p.Content), Result: p.Result,
		}
		if r := p.Ref; r != nil {
			out[j].Blob = &blobDTO{Of: r.Field, SHA256: r.SHA256, Size: r.Size}
		}
	}
	return out
}

// message converts m into a session.Message that keeps m's slices (a
// decoded DTO is nobody else's).
func (m messageDTO) message() session.Message {
	return session.Message{
		ID: m.ID, Role: m.Role, Parts: m.parts(m.Parts), ProviderPhase: m.ProviderPhase, CreatedAt: m.CreatedAt,
		ResponseID: m.ResponseID, Model: m.Model, Usage: m.Usage, Injected: m.Injected, Error: m.Error,
		Compaction: m.Compaction,
	}
}

func (m messageDTO) parts(ps []partDTO) []session.Part {
	if ps == nil {
		return nil
	}
	out := make([]session.Part, len(ps))
	for j, p := range ps {
		out[j] = session.Part{
			Type: p.Type, Text: p.Text, ToolCallID: p.ToolCallID, Name: p.Name,
			Input: p.Input, Output: p.Output, IsError: p.IsError,
			MediaType: p.MediaType, Data: p.Data,
			URL: p.URL, Signature: p.Signature, Encrypted: p.Encrypted, ProviderExecuted: p.ProviderExecuted,
			Content: m.parts(p.Content), Result: p.Result,
		}
		if b := p.Blob; b != nil {
			out[j].Ref = &session.ContentRef{Field: b.Of, SHA256: b.SHA256, Size: b.Size}
		}
	}
	return out
}

// Restore rebuilds an equivalent Session from the snapshot. It validates
// everything a hostile or damaged snapshot could get wrong and fails with
// an error naming the problem; it never substitutes a default for a value
// that is present but invalid. It never rewrites IDs or history; a
// message appended to the Session it returns without an ID gets one
// (session.Session.MarkRestored).
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
		Labels:                 snap.Labels,
		Workspace:              snap.Workspace,
		Origin:                 snap.Origin,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	s.ReserveMessages(len(snap.Messages))
	for i, m := range snap.Messages {
		if err := s.AppendMessage(m); err != nil {
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
	// Earlier revisions may have held messages past this conversation:
	// what is appended from here on without an ID gets one.
	s.MarkRestored()
	return s, nil
}
