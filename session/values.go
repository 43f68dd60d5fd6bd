package session

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The value types below appear verbatim in the persisted snapshot (package
// sessnap embeds them), so their JSON tags are part of the on-disk contract:
// change them only together with a new sessnap schema version.

// Limits are the brakes chosen at creation. Zero means unlimited.
type Limits struct {
	MaxTurns      int64 `json:"max_turns,omitempty"`
	MaxToolCalls  int64 `json:"max_tool_calls,omitempty"`
	MaxRunTokens  int64 `json:"max_run_tokens,omitempty"`
	MaxDurationMS int64 `json:"max_duration_ms,omitempty"`
}

// MaxDuration returns the wall-clock limit as a duration (0: unlimited).
func (l Limits) MaxDuration() time.Duration {
	return time.Duration(l.MaxDurationMS) * time.Millisecond
}

func (l Limits) validate() error {
	if anyNegative(l.MaxTurns, l.MaxToolCalls, l.MaxRunTokens, l.MaxDurationMS) {
		return invalidf("negative limit %+v", l)
	}
	return nil
}

// Counters are the running totals of a session's activity.
type Counters struct {
	Turns     int64 `json:"turns"`
	ToolCalls int64 `json:"tool_calls"`
	Approvals int64 `json:"approvals"`
}

func (c Counters) validate() error {
	if anyNegative(c.Turns, c.ToolCalls, c.Approvals) {
		return invalidf("negative counter %+v", c)
	}
	return nil
}

// Usage is cumulative token accounting. The run-token budget brake
// (Limits.MaxRunTokens) is checked against RunTokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// RunTokens is the figure the MaxRunTokens brake is evaluated against:
// input plus output tokens (cache traffic is not billed against the budget).
func (u Usage) RunTokens() int64 { return u.InputTokens + u.OutputTokens }

// IsZero reports whether no tokens were recorded.
func (u Usage) IsZero() bool { return u == Usage{} }

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

func (u Usage) validate() error {
	if anyNegative(u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens) {
		return invalidf("negative usage %+v", u)
	}
	return nil
}

// anyNegative is the rule of Limits, Counters and Usage: none of their
// figures is negative. The callers box the value for the message only when
// one is (a validation on the append path allocates nothing).
func anyNegative(figures ...int64) bool {
	return slices.ContainsFunc(figures, func(n int64) bool { return n < 0 })
}

// PendingAsk is a tool call parked on the user's approval. It exists only
// while the session is awaiting.
type PendingAsk struct {
	ID         string          `json:"id"`
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Reason     string          `json:"reason"`
	AskedAt    time.Time       `json:"asked_at"`
}

func (p PendingAsk) validate() error {
	if p.ID == "" || p.ToolCallID == "" || p.Tool == "" {
		return invalidf("pending ask needs id, tool_call_id and tool")
	}
	if len(p.Input) > 0 && !json.Valid(p.Input) {
		return invalidf("pending ask %q: input is not valid JSON", p.ID)
	}
	if p.AskedAt.IsZero() {
		return invalidf("pending ask %q: asked_at is zero", p.ID)
	}
	return nil
}

func (p PendingAsk) clone() PendingAsk {
	p.Input = slices.Clone(p.Input)
	return p
}

// Principal is a verified caller a session is attributed to.
type Principal struct {
	Subject     string `json:"subject"`
	Issuer      string `json:"issuer,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
}

// Authority is the derived capability payload of a session. It is valid
// only in its one canonical representation: non-empty, sorted, without
// duplicates, every entry from the Capabilities vocabulary (see
// ValidateAuthority).
type Authority struct {
	Capabilities []string `json:"capabilities"`
}

func (a Authority) clone() Authority {
	return Authority{Capabilities: slices.Clone(a.Capabilities)}
}

// The capability vocabulary. An authority naming anything else is refused:
// a capability this program does not know cannot be enforced, so it must
// not be silently accepted.
const (
	CapFilesRead      = "files.read"
	CapFilesWrite     = "files.write"
	CapCommandsRun    = "commands.run"
	CapNetworkFetch   = "network.fetch"
	CapMCPCall        = "mcp.call"
	CapAgentsSpawn    = "agents.spawn"
	CapApprovalsGrant = "approvals.grant"
)

// Capabilities lists the vocabulary in its canonical (sorted) order.
var Capabilities = []string{
	CapAgentsSpawn, CapApprovalsGrant, CapCommandsRun, CapFilesRead,
	CapFilesWrite, CapMCPCall, CapNetworkFetch,
}

// ValidateAuthority reports whether a is in its one canonical
// representation: at least one capability, strictly ascending (so no
// duplicates), each from the vocabulary.
func ValidateAuthority(a Authority) error {
	if len(a.Capabilities) == 0 {
		return invalidf("authority has no capabilities")
	}
	for i, c := range a.Capabilities {
		if _, ok := slices.BinarySearch(Capabilities, c); !ok {
			return invalidf("authority: unknown capability %q", c)
		}
		if i > 0 {
			prev := a.Capabilities[i-1]
			if prev == c {
				return invalidf("authority: duplicate capability %q", c)
			}
			if prev > c {
				return invalidf("authority: capabilities not in canonical order (%q before %q)", prev, c)
			}
		}
	}
	return nil
}

// EnvironmentRef is the durable identity of the execution environment a
// session runs in. All three fields are required.
type EnvironmentRef struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	Revision string `json:"revision"`
}

// Validate reports an incomplete reference.
func (r EnvironmentRef) Validate() error {
	var missing []string
	if r.Provider == "" {
		missing = append(missing, "provider")
	}
	if r.ID == "" {
		missing = append(missing, "id")
	}
	if r.Revision == "" {
		missing = append(missing, "revision")
	}
	if len(missing) > 0 {
		return invalidf("environment_ref is missing %v", missing)
	}
	return nil
}

// PlacementMetadata is display-only information about where a session runs.
// It is never used to reattach.
type PlacementMetadata struct {
	Host   string            `json:"host,omitempty"`
	Region string            `json:"region,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

func (p PlacementMetadata) clone() PlacementMetadata {
	if p.Labels != nil {
		m := make(map[string]string, len(p.Labels))
		for k, v := range p.Labels {
			m[k] = v
		}
		p.Labels = m
	}
	return p
}

// SessionRelationship links a session to the session that spawned or was
// forked into it. A sub-agent is a child session of kind subagent: ParentID
// is the session whose agent spawned it, RootID the top of that tree, Role
// what the sub-agent was asked to be (an agent type such as "reviewer"),
// and ToolCallID the parent's tool call that spawned it (empty when the
// runtime started it without one, like a compaction summarizer).
//
// A fork is a session started from another's conversation: ParentID is the
// session it was forked from, RootID that session's root, and ForkedAt,
// for a fork at a message (sessionstore.ForkAt), the ID of the last
// message it took from the parent (MessageIDAt; empty for a fork of the
// whole session or of an empty conversation).
type SessionRelationship struct {
	ParentID   SessionID `json:"parent_id,omitempty"`
	RootID     SessionID `json:"root_id,omitempty"`
	Role       string    `json:"role,omitempty"`
	ToolCallID string    `json:"tool_call_id,omitempty"`
	ForkedAt   string    `json:"forked_at,omitempty"`
}

// IsZero reports whether no relationship is recorded.
func (r SessionRelationship) IsZero() bool { return r == SessionRelationship{} }

// MaxPathBytes bounds a workspace path or branch name.
const MaxPathBytes = 4096

// Workspace is where a session's agent works. Project is the root of the
// project the session belongs to (the directory an agent was started for,
// typically a repository's top level); it is set at creation and never
// changes. Dir is the working directory and Branch the checked-out git
// branch ("" when not in a repository or unknown); both may change during
// the session (SetWorkspace). Paths are kept as the agent reported them;
// nothing here touches a file system.
type Workspace struct {
	Project string `json:"project,omitempty"`
	Dir     string `json:"dir,omitempty"`
	Branch  string `json:"branch,omitempty"`
}

// IsZero reports whether no workspace is recorded.
func (w Workspace) IsZero() bool { return w == Workspace{} }

func (w Workspace) validate() error {
	for _, f := range [...]struct{ name, v string }{{"project", w.Project}, {"dir", w.Dir}, {"branch", w.Branch}} {
		if len(f.v) > MaxPathBytes || !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) {
			return invalidf("workspace %s: not valid UTF-8 without NUL of at most %d bytes", f.name, MaxPathBytes)
		}
	}
	return nil
}

// Origin records that a session was imported from another tool's file, and
// what the latest import read. Tool and SessionID (with AgentID for a
// sub-agent conversation stored in its parent's source) identify the
// source and never change once set; the rest describes the latest import
// and is replaced by each re-import (SetOrigin). An importer that finds a
// session whose origin names the same source continues it instead of
// creating another.
type Origin struct {
	// Tool is the tool that wrote the source, as a lower-case name
	// ("claude-code", "codex"); required.
	Tool string `json:"tool"`
	// SessionID is the source's own session ID; required.
	SessionID string `json:"session_id"`
	// AgentID identifies a sub-agent's conversation within the source
	// session, for sources that store it under its parent's session ID.
	AgentID string `json:"agent_id,omitempty"`
	// Path is where the source was read from, as the importer named it.
	Path string `json:"path,omitempty"`
	// Version is the version of the tool that wrote the source.
	Version string `json:"version,omitempty"`
	// Lines, Bytes and SHA256 (lower-case hex) describe what the latest
	// import read of the source.
	Lines  int64  `json:"lines,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Validate reports an origin without its identity or with values outside
// their domain.
func (o Origin) Validate() error {
	if o.Tool == "" || o.SessionID == "" {
		return invalidf("origin needs tool and session_id")
	}
	if !labelKeyChars(o.Tool) || len(o.Tool) > MaxMessageIDBytes {
		return invalidf("origin tool %q: lower-case letters, digits, '.', '_', '-'", o.Tool)
	}
	for _, f := range [...]struct{ name, v string }{{"session_id", o.SessionID}, {"agent_id", o.AgentID}, {"version", o.Version}} {
		if len(f.v) > MaxMessageIDBytes || !utf8.ValidString(f.v) {
			return invalidf("origin %s: not valid UTF-8 of at most %d bytes", f.name, MaxMessageIDBytes)
		}
	}
	if len(o.Path) > MaxPathBytes || !utf8.ValidString(o.Path) {
		return invalidf("origin path: not valid UTF-8 of at most %d bytes", MaxPathBytes)
	}
	if o.Lines < 0 || o.Bytes < 0 {
		return invalidf("origin: negative lines or bytes")
	}
	if o.SHA256 != "" && (len(o.SHA256) != 64 || strings.Trim(o.SHA256, "0123456789abcdef") != "") {
		return invalidf("origin sha256 %q: 64 lower-case hex digits", o.SHA256)
	}
	return nil
}

// sameSource reports whether o and p name the same source.
func (o Origin) sameSource(p Origin) bool {
	return o.Tool == p.Tool && o.SessionID == p.SessionID && o.AgentID == p.AgentID
}

// Compaction describes how a compaction message came to be.
type Compaction struct {
	// Trigger says what started the compaction ("" when not recorded).
	Trigger CompactionTrigger `json:"trigger,omitempty"`
	// PreTokens is the size of the context it replaced, in tokens (0 when
	// not recorded).
	PreTokens int64 `json:"pre_tokens,omitempty"`
}

func (c Compaction) validate() error {
	if c.Trigger != "" && !c.Trigger.Valid() {
		return invalidf("compaction trigger %q", c.Trigger)
	}
	if c.PreTokens < 0 {
		return invalidf("negative compaction pre_tokens")
	}
	return nil
}
