package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Transcript is one conversation read from another tool's file: the
// session's identity, its messages, the steps in which the source added
// them, the sub-agent conversations it spawned, and the report of the
// read. A converter returns one; Config and Apply turn it into sessions.
type Transcript struct {
	// Tool names the tool that wrote the source ("claude-code", "codex");
	// SourceID is the source's own session ID; AgentID identifies a
	// sub-agent's conversation stored under its parent's session ID.
	Tool     string
	SourceID string
	AgentID  string
	// Path is where the source was read from, as the caller named it
	// (converters leave it empty; the fs.FS helpers set it).
	Path string
	// Version is the version of the tool that wrote the source.
	Version string

	Title           string
	TitleProvenance session.TitleProvenance
	// Workspace is the workspace at the end of the source.
	Workspace session.Workspace
	// Labels are labels the converter derives from the source (a git
	// remote, say); the caller may add its own.
	Labels map[string]string

	ProviderID, ModelID string
	ReasoningEffort     string
	Mode                session.PermissionMode

	// CreatedAt and UpdatedAt are the times of the source's first and last
	// dated lines (zero when it has none).
	CreatedAt, UpdatedAt time.Time

	// Messages is the conversation; Steps the source's steps over it.
	Messages []session.Message
	Steps    []Step

	// Link is set on a sub-agent's transcript: how it hangs off its
	// parent. Children are the sub-agents the converter attached.
	Link     *Link
	Children []*Transcript
	// Spawns maps the ID a source gives a sub-agent (Claude Code's
	// agentId, a Codex thread ID) to the parent's tool call that spawned
	// it and the role it was given, as far as this source tells.
	Spawns map[string]Spawn

	Report Report
}

// Step is one step of the source: the conversation's length after it and
// the title and workspace as of it. Each revision an import appends is one
// step. A step holds its messages as the whole source gives them: the
// blocks of a response that the source writes after the response's first
// tool results (Claude Code runs tools while it still writes a response)
// belong to the response's message from its first step on, so the
// conversation only ever grows.
type Step struct {
	Messages        int
	At              time.Time
	Title           string
	TitleProvenance session.TitleProvenance
	Workspace       session.Workspace
}

// Link ties a sub-agent's transcript to its parent.
type Link struct {
	// ParentSourceID is the parent's source session ID.
	ParentSourceID string
	// ToolCallID is the parent's tool call that spawned the sub-agent
	// ("" when the source does not say, or none did).
	ToolCallID string
	// Role is what the sub-agent was asked to be (an agent type).
	Role string
}

// Spawn is what a parent's source says about one sub-agent it spawned.
type Spawn struct {
	ToolCallID string
	Role       string
}

// Origin returns the origin record of an import of t: the source's
// identity and what this read of it saw. A source that names no session
// is identified by "sha256:" and the start of its content's hash (so an
// import of it can find its session again only while it is unchanged).
func (t *Transcript) Origin() *session.Origin {
	id := t.SourceID
	if id == "" {
		id = "sha256:" + t.Report.SHA256[:min(len(t.Report.SHA256), 32)]
	}
	return &session.Origin{
		Tool: t.Tool, SessionID: id, AgentID: t.AgentID, Path: t.Path, Version: t.Version,
		Lines: t.Report.Lines, Bytes: t.Report.Bytes, SHA256: t.Report.SHA256,
	}
}

// SessionID returns the session ID an import of t uses unless the caller
// picks another: the tool's name, the source's ID and, for a sub-agent,
// its agent ID ("claude-code-0d3a8e6f-…-a881341"), so that importing the
// same source again finds the same session. A source ID that is not safe
// as an ID (sessionstore.ValidateID) is replaced by its SHA-256.
func (t *Transcript) SessionID() session.SessionID {
	source := t.Origin().SessionID
	id := t.Tool + "-" + source
	if t.AgentID != "" {
		id += "-" + t.AgentID
	}
	if sessionstore.ValidateID(session.SessionID(id)) != nil {
		sum := sha256.Sum256([]byte(source + "\x00" + t.AgentID))
		id = t.Tool + "-" + hex.EncodeToString(sum[:16])
	}
	return session.SessionID(id)
}

// Config returns the configuration of a session imported from t, with ID
// id in the environment env: creation time, kind, provider and model, mode,
// effort, starting workspace, labels and origin from t. A sub-agent's
// relationship carries its role and spawning tool call; its ParentID and
// RootID are the store's IDs of its parent and root, which the caller sets.
// A transcript without any time is dated at the Unix epoch.
func (t *Transcript) Config(id session.SessionID, env session.EnvironmentRef) session.Config {
	cfg := session.Config{
		ID: id, CreatedAt: t.CreatedAt, Kind: session.KindPrimary, Mode: t.Mode,
		ProviderID: t.ProviderID, ModelID: t.ModelID, ReasoningEffort: t.ReasoningEffort,
		EnvironmentRef: env, Workspace: t.Workspace, Origin: t.Origin(),
	}
	if cfg.CreatedAt.IsZero() {
		cfg.CreatedAt = time.Unix(0, 0).UTC()
	}
	if len(t.Steps) > 0 {
		cfg.Workspace = t.Steps[0].Workspace
	}
	if len(t.Labels) > 0 {
		cfg.Labels = make(map[string]string, len(t.Labels))
		for k, v := range t.Labels {
			cfg.Labels[k] = v
		}
	}
	if t.Link != nil {
		cfg.Kind = session.KindSubagent
		cfg.Relationship = session.SessionRelationship{Role: t.Link.Role, ToolCallID: t.Link.ToolCallID}
	}
	return cfg
}

// Adopt attaches child, a sub-agent transcript read from its own file, to
// t: it fills in the child's spawning tool call and role from t's Spawns
// and appends it to t.Children. It reports false, attaching nothing, when
// child is not a sub-agent of t's source.
func (t *Transcript) Adopt(child *Transcript) bool {
	if child == nil || child.Link == nil || child.Link.ParentSourceID != t.SourceID || child.Tool != t.Tool {
		return false
	}
	key := child.AgentID
	if key == "" {
		key = child.SourceID
	}
	if sp, ok := t.Spawns[key]; ok {
		if child.Link.ToolCallID == "" {
			child.Link.ToolCallID = sp.ToolCallID
		}
		if child.Link.Role == "" {
			child.Link.Role = sp.Role
		}
	}
	t.Children = append(t.Children, child)
	return true
}

// Nest attaches every transcript of ts that is a sub-agent of another in
// ts to it (Adopt), and returns the others, the roots, in their order.
// A sub-agent whose parent is not in ts is returned as a root.
func Nest(ts []*Transcript) []*Transcript {
	byID := make(map[string]*Transcript, len(ts))
	for _, t := range ts {
		if t.Link == nil {
			byID[t.Tool+"\x00"+t.SourceID] = t
		}
	}
	var roots []*Transcript
	for _, t := range ts {
		if t.Link != nil {
			if p, ok := byID[t.Tool+"\x00"+t.Link.ParentSourceID]; ok && p != t && p.Adopt(t) {
				continue
			}
		}
		roots = append(roots, t)
	}
	return roots
}

// TitleCandidate reports whether text can title a session when it is the
// first prompt: not empty and not markup the agent runtime wrapped around
// a command or context ("<command-name>…", "<environment_context>…").
func TitleCandidate(text string) bool {
	text = strings.TrimSpace(text)
	return text != "" && !strings.HasPrefix(text, "<")
}
