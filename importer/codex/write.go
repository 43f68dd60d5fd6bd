package codex

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

// WriteOptions adjust Write. The zero value works.
type WriteOptions struct {
	// ThreadID is the rollout's thread ID (default: the origin's session
	// ID when the session was imported from Codex, else the session's ID).
	ThreadID string
	// ParentThreadID, when set, marks the rollout as a sub-agent's thread
	// spawned by that thread.
	ParentThreadID string
	// CLIVersion is the cli_version the rollout claims (default: the
	// origin's, or "sessionstore").
	CLIVersion string
}

// Write writes the conversation of s to w as a Codex rollout (JSONL of
// {timestamp, type, payload} lines): a session_meta line, a turn_context
// at each turn (and wherever the model changes), the history as
// response_item lines, and the event_msg lines that carry what the history
// does not: a user_message for each prompt a person typed, a token_count
// after each model response, each tool run's structured result (see
// runEvent: only a result that is a Codex tool run's event is written,
// as its call's), errors and the thread's name. Parse reads it back to the
// same conversation for a session imported from Codex. Nothing a session
// holds makes a line of its own: text, tool output and structured results
// are written inside the lines that carry them.
func Write(w io.Writer, s *session.Session, opts WriteOptions) error {
	wr := &writer{lw: importer.NewLineWriter(w), s: s, custom: map[string]bool{}}
	opts.ThreadID, opts.CLIVersion = importer.Claims(s, Tool, opts.ThreadID, opts.CLIVersion)
	wr.opts = opts
	wr.meta()
	turn := 0
	for _, m := range s.Conversation() {
		at := m.CreatedAt
		if at.IsZero() {
			at = s.CreatedAt()
		}
		if m.Role == session.RoleUser && !m.Injected && m.Compaction == nil || m.Model != "" && m.Model != wr.model {
			turn++
			model := wr.model
			if m.Model != "" {
				model = m.Model
			}
			wr.turnContext(at, fmt.Sprintf("%s-turn-%d", opts.ThreadID, turn), model)
		}
		wr.message(at, m)
	}
	if title, prov := s.Title(); prov == session.TitleExplicit || prov == session.TitleGenerated {
		wr.put(s.CreatedAt(), "event_msg", map[string]any{"type": "thread_name_updated", "thread_id": opts.ThreadID, "thread_name": title})
	}
	if err := wr.lw.Flush(); err != nil {
		return fmt.Errorf("codex: write: %w", err)
	}
	return nil
}

type writer struct {
	lw     *importer.LineWriter
	s      *session.Session
	opts   WriteOptions
	model  string
	total  tokenUsage
	custom map[string]bool // call IDs of custom tool calls
	lines  int             // lines written
}

// put writes a line. Each carries its ordinal, its place in the file (a
// field of the envelope newer Codex builds write, which older ones
// ignore): a reader takes a line equal to an earlier one for a copy (Parse
// does), and equal messages at one instant (a prompt said twice, a zero
// time) would otherwise write equal lines.
func (wr *writer) put(at time.Time, typ string, payload any) {
	wr.lines++
	wr.lw.Put(map[string]any{"timestamp": importer.Stamp(at), "type": typ,
		"ordinal": wr.lines, "payload": payload})
}

func (wr *writer) meta() {
	s := wr.s
	provider, model := s.Provider()
	wr.model = model
	ws := s.Workspace()
	cwd := ws.Project
	if cwd == "" {
		cwd = ws.Dir
	}
	meta := map[string]any{"id": wr.opts.ThreadID, "timestamp": s.CreatedAt().UTC().Format(time.RFC3339Nano), "cwd": cwd,
		"originator": "sessionstore", "cli_version": wr.opts.CLIVersion, "source": "cli", "model_provider": provider}
	if wr.opts.ParentThreadID != "" {
		rel := s.Relationship()
		meta["source"] = map[string]any{"subagent": map[string]any{"thread_spawn": map[string]any{
			"parent_thread_id": wr.opts.ParentThreadID, "depth": 1, "agent_role": rel.Role}}}
	}
	labels := s.Labels()
	if ws.Branch != "" || labels[LabelGitRemote] != "" || labels[LabelGitCommit] != "" {
		git := map[string]any{}
		if ws.Branch != "" {
			git["branch"] = ws.Branch
		}
		if v := labels[LabelGitRemote]; v != "" {
			git["repository_url"] = v
		}
		if v := labels[LabelGitCommit]; v != "" {
			git["commit_hash"] = v
		}
		meta["git"] = git
	}
	if v := labels[LabelForkedFrom]; v != "" {
		meta["forked_from_id"] = v
	}
	wr.put(s.CreatedAt(), "session_meta", meta)
}

func (wr *writer) turnContext(at time.Time, turnID, model string) {
	wr.model = model
	tc := map[string]any{"turn_id": turnID, "cwd": wr.s.Workspace().Dir, "model": model}
	if e := wr.s.ReasoningEffort(); e != "" {
		tc["effort"] = e
	}
	wr.put(at, "turn_context", tc)
}

func (wr *writer) message(at time.Time, m session.Message) {
	switch {
	case m.Compaction != nil:
		wr.compaction(at, m)
	case m.Error != "" && m.Role == session.RoleAssistant:
		wr.put(at, "event_msg", map[string]any{"type": "error", "message": m.Error})
	case m.Role == session.RoleAssistant:
		wr.assistant(at, m)
	case m.Role == session.RoleTool:
		wr.tool(at, m)
	default:
		role := "user"
		if m.Role == session.RoleSystem {
			role = "developer"
		}
		item := map[string]any{"type": "message", "role": role, "content": inputContent(m.Parts)}
		if m.ID != "" {
			item["id"] = m.ID
		}
		wr.put(at, "response_item", item)
		if m.Role == session.RoleUser && !m.Injected {
			wr.put(at, "event_msg", map[string]any{"type": "user_message", "message": importer.Text(m.Parts),
				"images": []any{}, "local_images": []any{}, "text_elements": []any{}})
		}
	}
}

// assistant writes a model response: its parts as items, then the token
// count that closes it (with no counts when the message has none).
func (wr *writer) assistant(at time.Time, m session.Message) {
	first := true
	item := func(v map[string]any) {
		if first && m.ID != "" {
			v["id"] = m.ID
		}
		first = false
		wr.put(at, "response_item", v)
	}
	var texts []any
	flush := func() {
		if len(texts) == 0 {
			return
		}
		v := map[string]any{"type": "message", "role": "assistant", "content": texts}
		if m.ProviderPhase != "" {
			v["phase"] = m.ProviderPhase
		}
		item(v)
		texts = nil
	}
	for _, p := range m.Parts {
		if p.Type == session.PartText {
			texts = append(texts, map[string]any{"type": "output_text", "text": p.Text})
			continue
		}
		flush()
		switch p.Type {
		case session.PartReasoning:
			summary := []any{}
			if p.Text != "" {
				summary = append(summary, map[string]any{"type": "summary_text", "text": p.Text})
			}
			v := map[string]any{"type": "reasoning", "summary": summary, "content": nil, "encrypted_content": nil}
			if p.Encrypted != "" {
				v["encrypted_content"] = p.Encrypted
			}
			item(v)
		case session.PartToolCall:
			item(wr.call(p))
		case session.PartImage:
			texts = append(texts, map[string]any{"type": "input_image", "image_url": imageURL(p)})
		}
	}
	flush()
	info := any(nil)
	if u := m.Usage; u != nil {
		last := tokenUsage{InputTokens: u.InputTokens + u.CacheReadTokens, CachedInputTokens: u.CacheReadTokens, OutputTokens: u.OutputTokens}
		last.TotalTokens = last.InputTokens + last.OutputTokens
		wr.total.InputTokens += last.InputTokens
		wr.total.CachedInputTokens += last.CachedInputTokens
		wr.total.OutputTokens += last.OutputTokens
		wr.total.TotalTokens += last.TotalTokens
		info = map[string]any{"total_token_usage": wr.total, "last_token_usage": last}
	}
	wr.put(at, "event_msg", map[string]any{"type": "token_count", "info": info, "rate_limits": nil})
}

func (wr *writer) call(p session.Part) map[string]any {
	var text string
	switch {
	case p.ProviderExecuted && p.Name == "web_search":
		v := map[string]any{"type": "web_search_call", "id": p.ToolCallID, "status": "completed"}
		if len(p.Input) > 0 {
			v["action"] = p.Input
		}
		return v
	case json.Unmarshal(p.Input, &text) == nil:
		// Input that is a JSON string is a custom tool's free text.
		wr.custom[p.ToolCallID] = true
		return map[string]any{"type": "custom_tool_call", "status": "completed", "call_id": p.ToolCallID, "name": p.Name, "input": text}
	}
	return map[string]any{"type": "function_call", "name": p.Name, "arguments": string(p.Input), "call_id": p.ToolCallID}
}

// tool writes each result as an output item, and its structured result
// as the event Codex wrote it in.
func (wr *writer) tool(at time.Time, m session.Message) {
	for i, p := range m.Parts {
		if p.Type != session.PartToolResult {
			continue
		}
		typ := "function_call_output"
		if wr.custom[p.ToolCallID] {
			typ = "custom_tool_call_output"
		}
		v := map[string]any{"type": typ, "call_id": p.ToolCallID, "output": p.Output}
		if len(p.Content) > 0 {
			v["output"] = inputContent(p.Content)
		}
		if i == 0 && m.ID != "" {
			v["id"] = m.ID
		}
		wr.put(at, "response_item", v)
		if ev := runEvent(p.Result, p.ToolCallID); ev != nil {
			wr.put(at, "event_msg", ev)
		}
	}
}

// runEvent returns the event that carries result, a tool result's
// structured result, as Codex writes a tool run's outcome: an event of one
// of the kinds Parse takes a result from (exec_command_end and the like),
// tied to its own call. Any other result gives nil and is not written:
// the result came from the session, from whoever wrote it, and written as
// an event of another kind it would be that event to whoever reads the
// rollout (a user_message is a prompt the user typed, an error an error
// reply, thread_name_updated the thread's name). Codex has no other place
// for a structured result; the output text is written either way.
//
// Keys that differ from "type" or "call_id" only in case are left out:
// Codex matches keys exactly and encoding/json (so Parse) regardless of
// case, and the two must read the same call.
func runEvent(result json.RawMessage, callID string) map[string]json.RawMessage {
	var ev map[string]json.RawMessage
	var typ string
	if json.Unmarshal(result, &ev) != nil || json.Unmarshal(ev["type"], &typ) != nil || !resultEvents[typ] {
		return nil
	}
	for k := range ev {
		if strings.EqualFold(k, "type") || strings.EqualFold(k, "call_id") {
			delete(ev, k)
		}
	}
	ev["type"], _ = json.Marshal(typ)
	ev["call_id"], _ = json.Marshal(callID)
	return ev
}

// compaction writes a compaction: its summary as the message, its
// encrypted content as the replacement history's compaction item.
func (wr *writer) compaction(at time.Time, m session.Message) {
	var history []any
	for _, p := range m.Parts {
		if p.Type == session.PartReasoning && p.Encrypted != "" {
			history = append(history, map[string]any{"type": "compaction", "encrypted_content": p.Encrypted})
		}
	}
	v := map[string]any{"message": importer.Text(m.Parts)}
	if len(history) > 0 {
		v["replacement_history"] = history
	}
	wr.put(at, "compacted", v)
}

func inputContent(parts []session.Part) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case session.PartImage:
			out = append(out, map[string]any{"type": "input_image", "image_url": imageURL(p)})
		case session.PartText:
			out = append(out, map[string]any{"type": "input_text", "text": p.Text})
		}
	}
	return out
}

func imageURL(p session.Part) string {
	if p.URL != "" {
		return p.URL
	}
	return "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}
