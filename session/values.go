package session

import (
	"encoding/json"
	"slices"
	"time"
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
	if l.MaxTurns < 0 || l.MaxToolCalls < 0 || l.MaxRunTokens < 0 || l.MaxDurationMS < 0 {
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
	if c.Turns < 0 || c.ToolCalls < 0 || c.Approvals < 0 {
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
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
		return invalidf("negative usage %+v", u)
	}
	return nil
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
// forked into it.
type SessionRelationship struct {
	ParentID SessionID `json:"parent_id,omitempty"`
	RootID   SessionID `json:"root_id,omitempty"`
	Role     string    `json:"role,omitempty"`
}

// IsZero reports whether no relationship is recorded.
func (r SessionRelationship) IsZero() bool { return r == SessionRelationship{} }
