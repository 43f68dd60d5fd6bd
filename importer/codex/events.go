package codex

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

type tokenUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	ReasoningTokens   int64 `json:"reasoning_output_tokens"`
	TotalTokens       int64 `json:"total_tokens"`
}

// event is an event_msg payload (only the fields the converter reads).
type event struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Info    *struct {
		Total *tokenUsage `json:"total_token_usage"`
		Last  *tokenUsage `json:"last_token_usage"`
	} `json:"info"`
	CallID     string `json:"call_id"`
	ThreadName string `json:"thread_name"`
	// Sub-agent spawns name the new thread in one of these.
	NewThreadID      string `json:"new_thread_id"`
	ReceiverThreadID string `json:"receiver_thread_id"`
	AgentRole        string `json:"agent_role"`
}

// Events that only mirror the history, and those that carry nothing a
// session keeps.
var (
	mirrorEvents = map[string]bool{"user_message": true, "agent_message": true, "agent_reasoning": true,
		"agent_reasoning_raw_content": true, "web_search_end": true, "context_compacted": true}
	quietEvents = map[string]bool{"task_started": true, "task_complete": true, "turn_aborted": true,
		"exec_command_begin": true, "patch_apply_begin": true, "mcp_tool_call_begin": true,
		"web_search_begin": true, "turn_diff": true, "background_event": true, "stream_error": true,
		"agent_reasoning_section_break": true, "plan_update": true, "entered_review_mode": true,
		"exited_review_mode": true, "collab_agent_spawn_begin": true}
	// resultEvents carry the structured outcome of a tool run.
	resultEvents = map[string]bool{"exec_command_end": true, "patch_apply_end": true, "mcp_tool_call_end": true}
)

func (p *parser) event(payload json.RawMessage, at time.Time) outcome {
	var ev event
	if importer.Unmarshal(payload, &ev) != nil || ev.Type == "" {
		return invalid
	}
	r := p.report()
	switch {
	case ev.Type == "token_count":
		return p.tokens(&ev)
	case ev.Type == "error":
		if ev.Message == "" {
			return invalid
		}
		p.group = -1
		p.b.Append(session.Message{Role: session.RoleAssistant, CreatedAt: at, Error: ev.Message,
			Parts: []session.Part{{Type: session.PartText, Text: ev.Message}}})
		return used
	case ev.Type == "thread_name_updated" && ev.ThreadName != "":
		p.b.SetTitle(ev.ThreadName, session.TitleExplicit)
		return used
	case resultEvents[ev.Type]:
		if ev.CallID == "" {
			return invalid
		}
		p.results[ev.CallID] = resultOf(payload)
		return used
	case strings.HasPrefix(ev.Type, "collab_agent_spawn") && ev.CallID != "" && (ev.NewThreadID != "" || ev.ReceiverThreadID != ""):
		thread := ev.NewThreadID
		if thread == "" {
			thread = ev.ReceiverThreadID
		}
		t := p.b.T()
		if t.Spawns == nil {
			t.Spawns = map[string]importer.Spawn{}
		}
		t.Spawns[thread] = importer.Spawn{ToolCallID: p.b.Fit("call_id", ev.CallID), Role: ev.AgentRole}
		return used
	case ev.Type == "user_message":
		p.prompts = append(p.prompts, ev.Message)
		r.Skip(importer.SkipDuplicate, "")
	case mirrorEvents[ev.Type]:
		r.Skip(importer.SkipDuplicate, "")
	case quietEvents[ev.Type]:
		r.Skip(importer.SkipNotConversation, "event_msg/"+ev.Type)
	default:
		r.Skip(importer.SkipUnknownType, "event_msg/"+ev.Type)
	}
	return counted
}

// tokens attaches a token count to the model response it follows. Codex
// repeats a count when only its rate limits changed: a total that did not
// move is a duplicate.
func (p *parser) tokens(ev *event) outcome {
	r := p.report()
	end := p.group
	p.group = -1 // a token count closes the model response
	if ev.Info == nil || ev.Info.Last == nil && ev.Info.Total == nil {
		r.Skip(importer.SkipNotConversation, "event_msg/token_count")
		return counted
	}
	if ev.Info.Total != nil && p.lastTotal != nil && *ev.Info.Total == *p.lastTotal {
		r.Skip(importer.SkipDuplicate, "")
		return counted
	}
	last := ev.Info.Last
	if last == nil { // older builds: only the running total
		d := *ev.Info.Total
		if t := p.lastTotal; t != nil {
			d = tokenUsage{InputTokens: d.InputTokens - t.InputTokens, CachedInputTokens: d.CachedInputTokens - t.CachedInputTokens,
				OutputTokens: d.OutputTokens - t.OutputTokens}
		}
		last = &d
	}
	if ev.Info.Total != nil {
		total := *ev.Info.Total
		p.lastTotal = &total
	}
	u := p.b.Tokens(session.Usage{InputTokens: last.InputTokens - last.CachedInputTokens, CacheReadTokens: last.CachedInputTokens,
		OutputTokens: last.OutputTokens})
	if u == nil {
		return used
	}
	if end < 0 {
		// A count after the response closed (its tool calls' outputs came
		// first): it belongs to the last assistant message.
		for i := p.b.Len() - 1; i >= 0; i-- {
			if p.b.Message(i).Role == session.RoleAssistant && p.b.Message(i).Error == "" {
				end = i
				break
			}
		}
	}
	if end < 0 {
		r.Drop("token_count before any model response")
		return used
	}
	m := p.b.Message(end)
	if m.Usage != nil {
		u = p.b.Tokens(m.Usage.Add(*u))
	}
	if u != nil {
		m.Usage = u
	}
	return used
}

// resultOf keeps a tool-run event as the structured result of its call,
// without what the history already holds (the output text) and the IDs
// that tie it to the call.
func resultOf(payload json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if importer.Unmarshal(payload, &fields) != nil {
		return nil
	}
	for _, k := range []string{"call_id", "turn_id", "stdout", "stderr", "aggregated_output", "formatted_output"} {
		delete(fields, k)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return importer.RawJSON(b)
}

// failed reports whether a tool run's structured result says it failed.
func failed(result json.RawMessage) bool {
	var r struct {
		ExitCode *int64 `json:"exit_code"`
		Success  *bool  `json:"success"`
		Status   string `json:"status"`
	}
	if importer.Unmarshal(result, &r) != nil {
		return false
	}
	return r.ExitCode != nil && *r.ExitCode != 0 || r.Success != nil && !*r.Success || r.Status == "failed" || r.Status == "declined"
}

// compacted converts a compaction: its summary (local compaction) or the
// replacement history the model continues from (remote compaction), which
// follows the compaction message.
func (p *parser) compacted(payload json.RawMessage, at time.Time) outcome {
	var c struct {
		Message            string            `json:"message"`
		ReplacementHistory []json.RawMessage `json:"replacement_history"`
	}
	if importer.Unmarshal(payload, &c) != nil {
		return invalid
	}
	p.group = -1
	m := session.Message{Role: session.RoleAssistant, CreatedAt: at, Compaction: &session.Compaction{}}
	if c.Message != "" {
		m.Parts = append(m.Parts, session.Part{Type: session.PartText, Text: c.Message})
	}
	var rest []json.RawMessage
	for _, raw := range c.ReplacementHistory {
		var it item
		if decodeItem(raw, &it) == nil && it.Type == "compaction" {
			enc := ""
			if it.Encrypted != nil {
				enc = *it.Encrypted
			}
			m.Parts = append(m.Parts, session.Part{Type: session.PartReasoning, Encrypted: enc})
			continue
		}
		rest = append(rest, raw)
	}
	if len(m.Parts) == 0 {
		m.Parts = []session.Part{{Type: session.PartText}}
	}
	p.b.Append(m)
	for _, raw := range rest {
		if p.item(raw, at) != used {
			p.report().Drop("replacement_history item")
		}
		p.group = -1
	}
	return used
}
