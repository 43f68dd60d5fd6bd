package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

// Tool is the name of Claude Code in an import's origin.
const Tool = "claude-code"

// Provider is the provider ID of an imported Claude Code session.
const Provider = "anthropic"

// RoleCompaction is the relationship role of the sub-agent that writes a
// compaction's summary (Claude Code's agent-acompact-* transcripts).
const RoleCompaction = "compaction"

// Options adjust Parse. The zero value works.
type Options struct {
	// MaxLineBytes bounds a line (0: importer.DefaultMaxLineBytes).
	MaxLineBytes int
}

// Parse reads one Claude Code transcript (a session's JSONL file, or a
// sub-agent's) from r and converts it. It never fails on a line: lines it
// cannot use are skipped and counted in the transcript's report; only an
// error reading r is returned. Sub-agent conversations stored inline
// (Claude Code 1.0's sidechains) become Children; a sub-agent file (every
// line a sidechain with an agentId) becomes a transcript with a Link, for
// its parent's Adopt.
func Parse(r io.Reader, opts Options) (*importer.Transcript, error) {
	p := &parser{convs: map[string]*conv{}, chainRoot: map[string]string{}, seen: map[string]bool{},
		calls: map[string]taskCall{}, spawns: map[string]importer.Spawn{}}
	p.main = p.conv("")
	t, err := importer.Convert(r, opts.MaxLineBytes, p.line, p.finish)
	if err != nil {
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	// An inline sidechain's source is its parent's file; its lines are
	// counted in the parent's report.
	for _, c := range t.Children {
		c.Report.Lines, c.Report.Bytes, c.Report.SHA256 = t.Report.Lines, t.Report.Bytes, t.Report.SHA256
	}
	return t, nil
}

// parser is the state of one Parse.
type parser struct {
	main  *conv
	convs map[string]*conv
	order []string // conversation keys in order of first appearance

	// report counts every line of the file, whichever conversation it
	// belongs to.
	report importer.Report

	sessionID, version string
	mode               session.PermissionMode
	model              string

	seen      map[string]bool // line uuids already imported
	lines     importer.LineSet
	chainRoot map[string]string // sidechain line uuid → its chain's root uuid
	calls     map[string]taskCall
	spawns    map[string]importer.Spawn
	// compact is the compact_boundary awaiting its summary line.
	compact *session.Compaction
}

// conv is one conversation in the file: the main one, or a sidechain.
type conv struct {
	key string
	b   *importer.Builder
	// open is the index of the current assistant message, which later
	// lines of the same response join; -1 when there is none.
	open     int
	openResp string
	agentID  string
	rootText string // a 1.0 sidechain's first prompt, the Task prompt it answers
}

type taskCall struct {
	prompt, role string
}

func (p *parser) conv(key string) *conv {
	c, ok := p.convs[key]
	if !ok {
		c = &conv{key: key, b: importer.NewBuilder(Tool), open: -1}
		c.b.CountInto(&p.report)
		p.convs[key] = c
		p.order = append(p.order, key)
	}
	return c
}

// envelope is the part of a line every type shares.
type envelope struct {
	Type        string          `json:"type"`
	UUID        string          `json:"uuid"`
	ParentUUID  *string         `json:"parentUuid"`
	IsSidechain bool            `json:"isSidechain"`
	SessionID   string          `json:"sessionId"`
	Timestamp   string          `json:"timestamp"`
	Cwd         string          `json:"cwd"`
	Version     string          `json:"version"`
	GitBranch   string          `json:"gitBranch"`
	AgentID     string          `json:"agentId"`
	IsMeta      bool            `json:"isMeta"`
	Message     json.RawMessage `json:"message"`

	PermissionMode  string          `json:"permissionMode"`
	ToolUseResult   json.RawMessage `json:"toolUseResult"`
	SourceToolUseID string          `json:"sourceToolUseID"`
	IsCompactSum    bool            `json:"isCompactSummary"`
	IsAPIError      bool            `json:"isApiErrorMessage"`

	Subtype         string          `json:"subtype"`
	Content         json.RawMessage `json:"content"`
	Error           json.RawMessage `json:"error"`
	CompactMetadata *struct {
		Trigger   string `json:"trigger"`
		PreTokens int64  `json:"preTokens"`
	} `json:"compactMetadata"`
	Data struct {
		Type    string `json:"type"`
		AgentID string `json:"agentId"`
	} `json:"data"`
	ParentToolUseID string `json:"parentToolUseID"`

	Summary     string `json:"summary"`
	CustomTitle string `json:"customTitle"`
	AITitle     string `json:"aiTitle"`
	Title       string `json:"title"`
}

// known lists the line fields Claude Code writes that the converter knows,
// used or deliberately not; any other field is counted as dropped.
var known = setOf("type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "sessionId", "timestamp",
	"cwd", "version", "userType", "gitBranch", "isMeta", "requestId", "agentId", "slug", "entrypoint",
	"promptId", "permissionMode", "sourceToolAssistantUUID", "sourceToolUseID", "toolUseResult",
	"thinkingMetadata", "todos", "message", "isCompactSummary", "isVisibleInTranscriptOnly",
	"isApiErrorMessage", "imagePasteIds", "subtype", "content", "level", "toolUseID", "compactMetadata",
	"hookCount", "hookInfos", "hookErrors", "preventedContinuation", "stopReason", "hasOutput", "durationMs",
	"messageCount", "error", "retryInMs", "retryAttempt", "maxRetries", "cause", "data", "parentToolUseID",
	"leafUuid", "summary", "customTitle", "aiTitle", "title", "messageId", "snapshot", "isSnapshotUpdate",
	"operation", "lastPrompt", "attachment", "agentName", "prNumber", "prUrl", "mcpMeta", "origin")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// notConversation lists the line types that carry nothing a session keeps.
var notConversation = setOf("progress", "attachment", "file-history-snapshot", "queue-operation",
	"permission-mode", "last-prompt", "agent-name", "pr-link", "worktree-state", "mode", "tag")

func (p *parser) line(l importer.Line) {
	r := &p.report
	var fields importer.Keys
	var e envelope
	if !l.Decode(r, &fields, &e) {
		return
	}
	typ := e.Type
	if typ == "" {
		r.Skip(importer.SkipUnknownType, "(none)")
		return
	}
	// A line seen before, or a conversational line whose uuid was, is a
	// copy (a resumed session's, or a file written twice).
	if !p.lines.First(l.Data) || e.UUID != "" && p.seen[e.UUID] {
		r.Skip(importer.SkipDuplicate, "")
		return
	}
	if e.UUID != "" {
		p.seen[e.UUID] = true
	}
	b := p.main.b
	e.UUID, e.SessionID = b.Fit("uuid", e.UUID), b.Fit("sessionId", e.SessionID)
	e.Version, e.AgentID = b.Fit("version", e.Version), b.Fit("agentId", e.AgentID)
	at := parseTime(e.Timestamp)
	switch typ {
	case "user", "assistant", "system":
		c := p.route(&e)
		c.b.Touch(at)
		if e.Cwd != "" || e.GitBranch != "" {
			c.b.SetWorkspace("", e.Cwd, e.GitBranch)
		}
		if e.SessionID != "" && p.sessionID == "" {
			p.sessionID = e.SessionID
		}
		if e.Version != "" {
			p.version = e.Version
		}
		if p.mode == "" && e.PermissionMode != "" {
			p.mode = modeOf(e.PermissionMode)
		}
		var o outcome
		switch typ {
		case "user":
			o = p.user(c, &e, at)
		case "assistant":
			o = p.assistant(c, &e, at)
		default:
			o = p.system(c, &e, at)
		}
		switch o {
		case skipped:
			return // the handler said why
		case merged:
			r.Merge()
			p.dropUnknown(typ, fields)
			return
		}
	case "summary", "custom-title", "ai-title":
		title, prov := e.Summary, session.TitleGenerated
		switch {
		case e.CustomTitle != "":
			title, prov = e.CustomTitle, session.TitleExplicit
		case e.AITitle != "":
			title = e.AITitle
		case e.Title != "":
			title = e.Title
			if typ == "custom-title" {
				prov = session.TitleExplicit
			}
		}
		if title == "" {
			r.Skip(importer.SkipInvalid, "")
			return
		}
		p.main.b.SetTitle(title, prov)
		if e.SessionID != "" && p.sessionID == "" {
			p.sessionID = e.SessionID
		}
	default:
		if typ == "progress" && e.Data.Type == "agent_progress" && e.Data.AgentID != "" && e.ParentToolUseID != "" {
			p.spawn(e.Data.AgentID, e.ParentToolUseID)
		}
		if notConversation[typ] {
			r.Skip(importer.SkipNotConversation, typ)
		} else {
			r.Skip(importer.SkipUnknownType, typ)
		}
		return
	}
	r.Use()
	p.dropUnknown(typ, fields)
}

// outcome is what a handler did with a line.
type outcome int

const (
	appended outcome = iota // the line is a message, or metadata the transcript keeps
	merged                  // the line joined an earlier message
	skipped                 // the handler counted why it skipped the line
)

func (p *parser) dropUnknown(typ string, fields importer.Keys) {
	for k := range fields {
		if !known[k] {
			p.report.Drop("field " + typ + "." + k)
		}
	}
}

// route returns the conversation a conversational line belongs to: the
// main one, a sub-agent's (by agentId), or a 1.0 sidechain (by the root
// of its parentUuid chain).
func (p *parser) route(e *envelope) *conv {
	if !e.IsSidechain {
		return p.main
	}
	if e.AgentID != "" {
		c := p.conv("agent:" + e.AgentID)
		c.agentID = e.AgentID
		return c
	}
	root := e.UUID
	if e.ParentUUID != nil {
		if r, ok := p.chainRoot[*e.ParentUUID]; ok {
			root = r
		}
	}
	if e.UUID != "" {
		p.chainRoot[e.UUID] = root
	}
	return p.conv("chain:" + root)
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func modeOf(m string) session.PermissionMode {
	switch m {
	case "plan":
		return session.ModePlan
	case "acceptEdits":
		return session.ModeAcceptEdits
	case "bypassPermissions":
		return session.ModeBypass
	}
	return session.ModeDefault
}

// userMessage is message of a user line.
type userMessage struct {
	Content json.RawMessage `json:"content"`
}

// message decodes the message of e into msg, and then its content (the
// field of msg that content points to) into parts. A line whose message
// does not decode, or has no part that can be used, is skipped as
// invalid: ok is false.
func (p *parser) message(e *envelope, msg any, content *json.RawMessage, assistant bool) (parts []session.Part, ok bool) {
	if importer.Unmarshal(e.Message, msg) == nil {
		parts = p.blocks(*content, assistant)
	}
	if len(parts) == 0 {
		p.report.Skip(importer.SkipInvalid, "")
		return nil, false
	}
	return parts, true
}

func (p *parser) user(c *conv, e *envelope, at time.Time) outcome {
	var um userMessage
	parts, ok := p.message(e, &um, &um.Content, false)
	if !ok {
		return skipped
	}
	m := session.Message{ID: e.UUID, Role: session.RoleUser, CreatedAt: at, Parts: parts, Injected: e.IsMeta}
	results := 0
	for _, part := range parts {
		if part.Type == session.PartToolResult {
			results++
		}
	}
	if results > 0 {
		m.Role = session.RoleTool
		p.attachResult(m.Parts, e)
	}
	if e.IsCompactSum {
		m.Injected = true
		m.Compaction = &session.Compaction{}
		if p.compact != nil {
			m.Compaction = p.compact
		}
	}
	p.compact = nil
	if c.key != "" && c.b.Len() == 0 && m.Role == session.RoleUser {
		c.rootText = importer.Text(parts)
	}
	if m.Role == session.RoleUser {
		// A prompt ends the response; tool results do not: Claude Code
		// runs a response's tools while it still writes the response.
		c.open = -1
	}
	c.b.Append(m)
	return appended
}

// attachResult puts the line's toolUseResult, the structured copy of a
// tool's result, on the tool_result it belongs to, and notes a sub-agent
// spawned by the call.
func (p *parser) attachResult(parts []session.Part, e *envelope) {
	raw := bytes.TrimSpace(e.ToolUseResult)
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	target := -1
	for i, part := range parts {
		if part.Type != session.PartToolResult {
			continue
		}
		if target < 0 || part.ToolCallID == e.SourceToolUseID {
			target = i
		}
	}
	parts[target].Result = importer.RawJSON(raw)
	var spawn struct {
		AgentID string `json:"agentId"`
	}
	if importer.Unmarshal(raw, &spawn) == nil && spawn.AgentID != "" {
		p.spawn(spawn.AgentID, parts[target].ToolCallID)
	}
}

func (p *parser) spawn(agentID, toolCallID string) {
	sp := p.spawns[agentID]
	if sp.ToolCallID == "" {
		sp.ToolCallID = toolCallID
	}
	if sp.Role == "" {
		sp.Role = p.calls[toolCallID].role
	}
	p.spawns[agentID] = sp
}

// assistantMessage is message of an assistant line: one Anthropic API
// response, or one content block of it.
type assistantMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

func (p *parser) assistant(c *conv, e *envelope, at time.Time) outcome {
	var am assistantMessage
	parts, ok := p.message(e, &am, &am.Content, true)
	if !ok {
		return skipped
	}
	var usage *session.Usage
	if u := am.Usage; u != nil {
		usage = c.b.Tokens(session.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens})
	}
	am.ID, am.Model = c.b.Fit("message.id", am.ID), c.b.Fit("message.model", am.Model)
	if am.Model != "" && am.Model != "<synthetic>" && p.model == "" {
		p.model = am.Model
	}
	// One API response is written a content block a line: join the lines
	// of the current response into its message.
	if am.ID != "" && c.open >= 0 && am.ID == c.openResp {
		m := c.b.Message(c.open)
		m.Parts = append(m.Parts, parts...)
		if usage != nil {
			m.Usage = usage // later lines carry the response's final counts
		}
		if e.IsAPIError {
			m.Error = importer.Text(m.Parts)
		}
		return merged
	}
	m := session.Message{ID: e.UUID, Role: session.RoleAssistant, ResponseID: am.ID, Model: am.Model,
		Usage: usage, CreatedAt: at, Parts: parts}
	if e.IsAPIError {
		m.Error = importer.Text(parts)
	}
	c.open, c.openResp = c.b.Append(m), am.ID
	return appended
}

func (p *parser) system(c *conv, e *envelope, at time.Time) outcome {
	if e.Subtype == "compact_boundary" {
		p.compact = &session.Compaction{}
		if md := e.CompactMetadata; md != nil {
			if t := session.CompactionTrigger(md.Trigger); t.Valid() {
				p.compact.Trigger = t
			}
			if md.PreTokens > 0 && md.PreTokens <= importer.MaxTokens {
				p.compact.PreTokens = md.PreTokens
			}
		}
		return appended
	}
	var text string
	if importer.Unmarshal(e.Content, &text) != nil || text == "" {
		if e.Subtype == "api_error" {
			text = errorText(e.Error)
		}
		if text == "" {
			p.report.Skip(importer.SkipNotConversation, "system/"+e.Subtype)
			return skipped
		}
	}
	m := session.Message{ID: e.UUID, Role: session.RoleSystem, CreatedAt: at,
		Parts: []session.Part{{Type: session.PartText, Text: text}}}
	if e.Subtype == "api_error" {
		m.Error = errorText(e.Error)
		if m.Error == "" {
			m.Error = text
		}
	}
	c.b.Append(m)
	return appended
}

// errorText returns the message of an api_error line's error: a string,
// or an object's message (however deep the API nested it).
func errorText(raw json.RawMessage) string {
	var s string
	if importer.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if importer.Unmarshal(raw, &obj) != nil {
		return ""
	}
	if obj.Message != "" {
		return obj.Message
	}
	if len(obj.Error) > 0 {
		return errorText(obj.Error)
	}
	return ""
}

// finish assembles the transcript: the main conversation, or the one
// sub-agent a sub-agent file holds, with the others as children.
func (p *parser) finish() *importer.Transcript {
	mainConv := p.main
	children := make([]*conv, 0, len(p.order))
	for _, k := range p.order {
		if c := p.convs[k]; c != p.main {
			children = append(children, c)
		}
	}
	subagentFile := p.main.b.Len() == 0 && len(children) == 1 && children[0].agentID != ""
	if subagentFile {
		mainConv, children = children[0], nil
		// A sub-agent file's title lines, if any, were its own.
		mainConv.b.SetTitle(p.main.b.Title())
	}
	t := p.transcript(mainConv)
	t.Spawns = p.spawns
	if subagentFile {
		t.AgentID = mainConv.agentID
		t.Link = &importer.Link{ParentSourceID: p.sessionID}
		if strings.HasPrefix(t.AgentID, "acompact") {
			t.Link.Role = RoleCompaction // the summarizer of a compaction; no tool call spawned it
		}
	}
	for _, c := range children {
		ct := p.transcript(c)
		ct.AgentID = c.agentID
		if ct.AgentID == "" {
			ct.AgentID = strings.TrimPrefix(c.key, "chain:")
		}
		ct.Link = &importer.Link{ParentSourceID: p.sessionID}
		if c.agentID == "" {
			// A 1.0 sidechain answers the Task call whose prompt it got.
			for id, call := range p.calls {
				if call.prompt != "" && call.prompt == c.rootText {
					ct.Link.ToolCallID, ct.Link.Role = id, call.role
					break
				}
			}
		}
		t.Adopt(ct)
	}
	t.Report = p.report
	t.Report.Messages = len(t.Messages)
	return t
}

func (p *parser) transcript(c *conv) *importer.Transcript {
	bt := c.b.T()
	bt.SourceID, bt.Version = p.sessionID, p.version
	bt.ProviderID, bt.ModelID, bt.Mode = Provider, p.model, p.mode
	return c.b.Finish()
}
