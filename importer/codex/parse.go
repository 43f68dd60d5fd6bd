package codex

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

// Tool is the name of the Codex CLI in an import's origin.
const Tool = "codex"

// Options adjust Parse. The zero value works.
type Options struct {
	// MaxLineBytes bounds a line (0: importer.DefaultMaxLineBytes).
	MaxLineBytes int
}

// Parse reads one Codex rollout file from r and converts it. It never
// fails on a line: lines it cannot use are skipped and counted in the
// transcript's report; only an error reading r is returned.
//
// The model-visible history (response_item lines) is the conversation;
// event_msg lines contribute what the history lacks (token counts, the
// exit codes and diffs of tool runs, errors, sub-agent spawns) and are
// otherwise duplicates of history items.
func Parse(r io.Reader, opts Options) (*importer.Transcript, error) {
	p := &parser{b: importer.NewBuilder(Tool), group: -1,
		results: map[string]json.RawMessage{}, calls: map[string]int{}, ids: map[string]bool{}}
	t, err := importer.Convert(r, opts.MaxLineBytes, p.line, p.finish)
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	return t, nil
}

type parser struct {
	b *importer.Builder

	// group is the index of the assistant message the current model
	// response is building (-1: none); a token count, any input or a
	// change of phase ends it.
	group int
	phase string

	model       string // the current turn's model
	lines       importer.LineSet
	prompts     []string                   // user_message texts: what a person typed
	results     map[string]json.RawMessage // call ID → the structured result of its run
	calls       map[string]int             // call ID → index of the tool message answering it
	ids         map[string]bool            // item IDs used as message IDs
	lastTotal   *tokenUsage
	webSearches int
	metaSeen    bool
}

func (p *parser) report() *importer.Report { return p.b.Report() }

// rollout line envelope.
type envelope struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// itemTypes are the response item types, which old rollouts wrote bare.
var itemTypes = map[string]bool{"message": true, "reasoning": true, "function_call": true,
	"function_call_output": true, "custom_tool_call": true, "custom_tool_call_output": true,
	"local_shell_call": true, "web_search_call": true, "compaction": true, "ghost_snapshot": true,
	"tool_search_call": true, "tool_search_output": true, "image_generation_call": true}

func (p *parser) line(l importer.Line) {
	r := p.report()
	var e envelope
	var fields importer.Keys
	if !l.Decode(r, &fields, &e) {
		return
	}
	// Codex writes no two lines alike (each has its time); a repeated
	// line is a copy.
	if !p.lines.First(l.Data) {
		r.Skip(importer.SkipDuplicate, "")
		return
	}
	at := parseTime(e.Timestamp)
	payload := e.Payload
	typ := e.Type
	if len(payload) == 0 {
		// A rollout from before the envelope: a bare meta line, state
		// markers, and bare response items.
		switch {
		case has(fields, "record_type"):
			r.Skip(importer.SkipNotConversation, "record_type")
			return
		case itemTypes[typ]:
			payload, typ = l.Data, "response_item"
		case typ == "" && has(fields, "id"):
			payload, typ = l.Data, "session_meta"
		}
	}
	p.b.Touch(at)
	var o outcome
	switch typ {
	case "session_meta":
		o = p.meta(payload, at)
	case "turn_context":
		o = p.turnContext(payload)
	case "response_item":
		o = p.item(payload, at)
	case "event_msg":
		o = p.event(payload, at)
	case "compacted":
		o = p.compacted(payload, at)
	case "":
		r.Skip(importer.SkipUnknownType, "(none)")
		return
	default:
		r.Skip(importer.SkipUnknownType, typ)
		return
	}
	switch o {
	case used:
		r.Use()
	case invalid:
		r.Skip(importer.SkipInvalid, "")
	}
}

// outcome is what a handler did with a line. Handlers that skip for
// another reason count it themselves and return counted.
type outcome int

const (
	used outcome = iota
	invalid
	counted
)

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

type sessionMeta struct {
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	CLIVersion    string `json:"cli_version"`
	ModelProvider string `json:"model_provider"`
	ForkedFromID  string `json:"forked_from_id"`
	ParentThread  string `json:"parent_thread_id"`
	Git           *struct {
		CommitHash    string `json:"commit_hash"`
		Branch        string `json:"branch"`
		RepositoryURL string `json:"repository_url"`
	} `json:"git"`
	Source json.RawMessage `json:"source"`
}

// Labels an imported Codex session may carry, from its session_meta.
const (
	LabelGitRemote  = "git.remote"
	LabelGitCommit  = "git.commit"
	LabelForkedFrom = "codex.forked-from"
)

func (p *parser) meta(payload json.RawMessage, at time.Time) outcome {
	var m sessionMeta
	if importer.Unmarshal(payload, &m) != nil || m.ID == "" {
		return invalid
	}
	m.ID, m.CLIVersion, m.ModelProvider = p.b.Fit("session id", m.ID), p.b.Fit("cli_version", m.CLIVersion), p.b.Fit("model_provider", m.ModelProvider)
	if m.ID == "" {
		return invalid
	}
	t := p.b.T()
	if !p.metaSeen {
		// A rollout may hold more than one session_meta (a resumed or
		// forked thread); the first names the file's thread.
		p.metaSeen = true
		t.SourceID = m.ID
		if ts := parseTime(m.Timestamp); !ts.IsZero() {
			p.b.Touch(ts)
		}
		if m.ModelProvider != "" {
			t.ProviderID = m.ModelProvider
		}
		if parent, role := subagentOf(m); parent != "" {
			t.Link = &importer.Link{ParentSourceID: parent, Role: role}
		}
	}
	if m.CLIVersion != "" {
		t.Version = m.CLIVersion
	}
	branch := ""
	if g := m.Git; g != nil {
		branch = g.Branch
		p.label(LabelGitRemote, g.RepositoryURL)
		p.label(LabelGitCommit, g.CommitHash)
	}
	p.label(LabelForkedFrom, m.ForkedFromID)
	p.b.SetWorkspace(m.Cwd, m.Cwd, branch)
	return used
}

// subagentOf returns the parent thread and role of a sub-agent's rollout:
// source {"subagent": {"thread_spawn": {"parent_thread_id", "agent_role"}}}
// or {"subagent": "review"}, or a top-level parent_thread_id.
func subagentOf(m sessionMeta) (parent, role string) {
	var src struct {
		Subagent json.RawMessage `json:"subagent"`
	}
	if importer.Unmarshal(m.Source, &src) == nil && len(src.Subagent) > 0 {
		var name string
		if importer.Unmarshal(src.Subagent, &name) == nil {
			role = name
		} else {
			var kinds map[string]struct {
				ParentThreadID string `json:"parent_thread_id"`
				AgentRole      string `json:"agent_role"`
			}
			if importer.Unmarshal(src.Subagent, &kinds) == nil {
				for kind, v := range kinds {
					parent, role = v.ParentThreadID, v.AgentRole
					if role == "" {
						role = kind
					}
				}
			}
		}
	}
	if parent == "" {
		parent = m.ParentThread
	}
	return parent, role
}

func (p *parser) label(k, v string) {
	if v == "" || session.ValidateLabel(k, v) != nil {
		return
	}
	t := p.b.T()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[k] = v
}

func (p *parser) turnContext(payload json.RawMessage) outcome {
	var tc struct {
		Cwd    string `json:"cwd"`
		Model  string `json:"model"`
		Effort string `json:"effort"`
	}
	if importer.Unmarshal(payload, &tc) != nil {
		return invalid
	}
	t := p.b.T()
	tc.Model, tc.Effort = p.b.Fit("model", tc.Model), p.b.Fit("effort", tc.Effort)
	if tc.Model != "" {
		p.model = tc.Model
		if t.ModelID == "" {
			t.ModelID = tc.Model
		}
	}
	if tc.Effort != "" && t.ReasoningEffort == "" {
		t.ReasoningEffort = tc.Effort
	}
	p.b.SetWorkspace("", tc.Cwd, "")
	return used
}

// Prefixes of the context Codex injects as user messages; a user message
// that starts with one and that no user_message event typed is injected.
var injectedPrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
	"<permissions instructions>", "<collaboration_mode>", "<skills_instructions>", "<plugins_instructions>",
	"<user_shell_command>", "<turn_aborted>", "<subagent_notification>", "<INSTRUCTIONS>"}

func (p *parser) finish() *importer.Transcript {
	typed := map[string]int{}
	for _, s := range p.prompts {
		typed[strings.TrimSpace(s)]++
	}
	for i := range p.b.Len() {
		m := p.b.Message(i)
		switch m.Role {
		case session.RoleUser:
			text := strings.TrimSpace(importer.Text(m.Parts))
			if typed[text] > 0 {
				typed[text]--
				continue
			}
			for _, pre := range injectedPrefixes {
				if strings.HasPrefix(text, pre) {
					m.Injected = true
					break
				}
			}
		case session.RoleTool:
			for j := range m.Parts {
				part := &m.Parts[j]
				if res, ok := p.results[part.ToolCallID]; ok && res != nil {
					part.Result = res
					part.IsError = failed(res)
					delete(p.results, part.ToolCallID)
				}
			}
		}
	}
	for range p.results {
		p.report().Drop("tool run event without its output")
	}
	return p.b.Finish()
}

func has(k importer.Keys, key string) bool {
	_, ok := k[key]
	return ok
}
