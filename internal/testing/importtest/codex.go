package importtest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/session"
)

// CodexFile is what a Codex rollout holds, read independently of the
// converters with plain maps and the rules FORMATS.md states: the response items are
// the history; a model response's items (reasoning, messages, calls) make
// one assistant message, which its token_count closes; calls and outputs
// pair by call_id; user_message events are what a person typed;
// token_count totals are cumulative, so a count whose total did not move
// is a repeat.
type CodexFile struct {
	Roles                  map[session.Role]int
	Calls, Outputs         []string
	Reasoning, Encrypted   int
	Texts                  int
	Structured, Failures   int
	Usage                  session.Usage
	Prompts                int
	ThreadID, Model, Cwd   string
	Branch, Remote, Effort string
}

// ReadCodex reads data, a Codex rollout, independently.
func ReadCodex(data []byte) CodexFile {
	e := CodexFile{Roles: map[session.Role]int{}}
	open, phase := false, ""
	var lastTotal map[string]any
	num := func(m map[string]any, k string) int64 { f, _ := m[k].(float64); return int64(f) }
	for _, line := range bytes.Split(data, []byte("\n")) {
		var o map[string]any
		if json.Unmarshal(line, &o) != nil {
			continue
		}
		p, _ := o["payload"].(map[string]any)
		switch o["type"] {
		case "session_meta":
			e.ThreadID, _ = p["id"].(string)
			e.Cwd, _ = p["cwd"].(string)
			git, _ := p["git"].(map[string]any)
			e.Branch, _ = git["branch"].(string)
			e.Remote, _ = git["repository_url"].(string)
		case "turn_context":
			if e.Model == "" {
				e.Model, _ = p["model"].(string)
				e.Effort, _ = p["effort"].(string)
			}
		case "response_item":
			typ, _ := p["type"].(string)
			assistantSide := false
			switch typ {
			case "message":
				switch p["role"] {
				case "user":
					e.Roles[session.RoleUser]++
					open = false
				case "developer":
					e.Roles[session.RoleSystem]++
					open = false
				case "assistant":
					assistantSide = true
					e.Texts += len(p["content"].([]any))
					if ph, _ := p["phase"].(string); open && phase != "" && ph != "" && ph != phase {
						open = false // a new phase is a new message
					}
				}
			case "reasoning":
				assistantSide = true
				e.Reasoning++
				if enc, _ := p["encrypted_content"].(string); enc != "" {
					e.Encrypted++
				}
			case "function_call", "custom_tool_call":
				assistantSide = true
				e.Calls = append(e.Calls, p["call_id"].(string))
			case "web_search_call":
				assistantSide = true
				e.Calls = append(e.Calls, "web")
			case "function_call_output", "custom_tool_call_output":
				e.Outputs = append(e.Outputs, p["call_id"].(string))
				e.Roles[session.RoleTool]++
				open = false
			}
			if assistantSide && !open {
				open, phase = true, ""
				e.Roles[session.RoleAssistant]++
			}
			if ph, _ := p["phase"].(string); typ == "message" && ph != "" {
				phase = ph
			}
		case "event_msg":
			switch p["type"] {
			case "token_count":
				open = false
				info, _ := p["info"].(map[string]any)
				if info == nil {
					continue
				}
				total, _ := info["total_token_usage"].(map[string]any)
				if lastTotal != nil && jsonEqual(total, lastTotal) {
					continue
				}
				lastTotal = total
				last := info["last_token_usage"].(map[string]any)
				e.Usage = e.Usage.Add(session.Usage{InputTokens: num(last, "input_tokens") - num(last, "cached_input_tokens"),
					CacheReadTokens: num(last, "cached_input_tokens"), OutputTokens: num(last, "output_tokens")})
			case "user_message":
				e.Prompts++
			case "exec_command_end":
				e.Structured++
				if num(p, "exit_code") != 0 {
					e.Failures++
				}
			case "patch_apply_end":
				e.Structured++
				if p["success"] == false {
					e.Failures++
				}
			}
		}
	}
	return e
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// CheckCodex fails the test unless s, a session imported from a Codex
// rollout, holds what want (ReadCodex of that rollout) says it holds:
// messages by role, calls and outputs in order and paired, reasoning,
// assistant texts, structured results and failures, per-message and
// session usage, turns, injected context, counters.
func CheckCodex(t testing.TB, want CodexFile, s *session.Session) {
	t.Helper()
	conv := s.Conversation()
	got := tallyOf(conv)
	require.Equal(t, want.Roles, got.roles)
	require.Equal(t, want.Calls, got.calls)
	require.Equal(t, want.Outputs, got.results)
	require.Equal(t, want.Reasoning, got.reasoning)
	require.Equal(t, want.Encrypted, got.encrypted)
	require.Equal(t, want.Texts, got.texts)
	require.Equal(t, want.Structured, got.structured, "each tool run's event is its call's structured result")
	require.Equal(t, want.Failures, got.failures)
	require.Equal(t, want.Usage, got.usage)
	require.Equal(t, want.Usage, s.Usage())
	require.Equal(t, int64(want.Prompts), s.Counters().Turns)
	require.Equal(t, want.Roles[session.RoleUser]-want.Prompts, got.injected, "user messages no person typed are injected")
	require.Equal(t, int64(len(want.Calls)), s.Counters().ToolCalls)

	CheckPairing(t, conv)
}
