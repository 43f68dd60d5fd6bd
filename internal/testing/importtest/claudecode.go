package importtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/session"
)

// ClaudeCodeFile is what a Claude Code file holds, read independently of
// the converters: plain maps, and the rules FORMATS.md states (lines are
// deduplicated by uuid; the lines of one API response share message.id
// and make one message, until a prompt; usage is the response's last).
type ClaudeCodeFile struct {
	Messages, Merged     int
	Roles                map[session.Role]int
	ToolUses             []string // tool_use ids in order
	ToolResults          []string // tool_result tool_use_ids in order
	Thinking             int
	Images, ImageBytes   int
	Usage                session.Usage
	Prompts              int // human prompts: the turns
	Compactions          int
	Structured           int // tool results with a toolUseResult
	Injected             int
	SessionID, LastModel string
}

// ReadClaudeCode reads data, a Claude Code file, independently.
func ReadClaudeCode(t testing.TB, data []byte) ClaudeCodeFile {
	e := ClaudeCodeFile{Roles: map[session.Role]int{}}
	seen := map[string]bool{}
	usageOf := map[string]map[string]any{}
	var respOrder []string
	openID := ""
	for _, line := range bytes.Split(data, []byte("\n")) {
		var o map[string]any
		if json.Unmarshal(line, &o) != nil {
			continue
		}
		if u, _ := o["uuid"].(string); u != "" {
			if seen[u] {
				continue
			}
			seen[u] = true
		}
		if o["isSidechain"] == true && o["agentId"] == nil {
			continue // 1.0 inline sidechains are children
		}
		msg, _ := o["message"].(map[string]any)
		switch o["type"] {
		case "user":
			blocks, _ := msg["content"].([]any)
			isTool := false
			for _, b := range blocks {
				bm := b.(map[string]any)
				switch bm["type"] {
				case "tool_result":
					isTool = true
					e.ToolResults = append(e.ToolResults, bm["tool_use_id"].(string))
					if nested, ok := bm["content"].([]any); ok {
						for _, n := range nested {
							if n.(map[string]any)["type"] == "image" {
								e.countImage(t, n.(map[string]any))
							}
						}
					}
				case "image":
					e.countImage(t, bm)
				}
			}
			e.Messages++
			if isTool {
				e.Roles[session.RoleTool]++
				if o["toolUseResult"] != nil {
					e.Structured++
				}
				continue
			}
			e.Roles[session.RoleUser]++
			openID = ""
			switch {
			case o["isCompactSummary"] == true:
				e.Compactions++
				e.Injected++
			case o["isMeta"] == true:
				e.Injected++
			default:
				e.Prompts++
			}
		case "assistant":
			id := msg["id"].(string)
			if m, _ := msg["model"].(string); m != "" && m != "<synthetic>" && e.LastModel == "" {
				e.LastModel = m
			}
			if u, ok := msg["usage"].(map[string]any); ok {
				if _, known := usageOf[id]; !known {
					respOrder = append(respOrder, id)
				}
				usageOf[id] = u
			}
			for _, b := range msg["content"].([]any) {
				bm := b.(map[string]any)
				switch bm["type"] {
				case "tool_use":
					e.ToolUses = append(e.ToolUses, bm["id"].(string))
				case "thinking":
					e.Thinking++
				}
			}
			if id == openID {
				e.Merged++
				continue
			}
			openID = id
			e.Messages++
			e.Roles[session.RoleAssistant]++
		case "system":
			if c, _ := o["content"].(string); c != "" && o["subtype"] != "compact_boundary" {
				e.Messages++
				e.Roles[session.RoleSystem]++
			}
		}
		if s, _ := o["sessionId"].(string); s != "" && e.SessionID == "" {
			e.SessionID = s
		}
	}
	num := func(u map[string]any, k string) int64 { f, _ := u[k].(float64); return int64(f) }
	for _, id := range respOrder {
		u := usageOf[id]
		e.Usage = e.Usage.Add(session.Usage{InputTokens: num(u, "input_tokens"), OutputTokens: num(u, "output_tokens"),
			CacheReadTokens: num(u, "cache_read_input_tokens"), CacheWriteTokens: num(u, "cache_creation_input_tokens")})
	}
	return e
}

// countImage counts an image block: its bytes when it holds them, none
// when its source is a URL.
func (e *ClaudeCodeFile) countImage(t testing.TB, b map[string]any) {
	src := b["source"].(map[string]any)
	if src["type"] == "url" {
		e.Images++
		return
	}
	data, err := base64.StdEncoding.DecodeString(src["data"].(string))
	require.NoError(t, err)
	e.Images++
	e.ImageBytes += len(data)
}

// CheckClaudeCode fails the test unless s, a session imported from a
// Claude Code file, holds what want (ReadClaudeCode of that file) says the
// file holds: messages by role, tool calls and results in order and
// paired, reasoning, images and their bytes, compactions, structured
// results, injected context, per-message and session usage, counters.
func CheckClaudeCode(t testing.TB, want ClaudeCodeFile, s *session.Session) {
	t.Helper()
	conv := s.Conversation()
	require.Len(t, conv, want.Messages)
	got := tallyOf(conv)
	require.Equal(t, want.Roles, got.roles)
	require.Equal(t, want.ToolUses, got.ownCalls)
	require.Equal(t, want.ToolResults, got.results)
	require.Equal(t, want.Thinking, got.reasoning)
	require.Equal(t, want.Images, got.images)
	require.Equal(t, want.ImageBytes, got.imageBytes)
	require.Equal(t, want.Compactions, got.compactions)
	require.Equal(t, want.Structured, got.structured)
	require.Equal(t, want.Injected, got.injected)
	require.Equal(t, want.Usage, got.usage, "per-message usage sums to the responses'")
	require.Equal(t, want.Usage, s.Usage(), "the session's usage is the sum of its responses'")
	require.Equal(t, int64(len(want.ToolUses)), s.Counters().ToolCalls)
	require.Equal(t, int64(want.Prompts), s.Counters().Turns)

	CheckPairing(t, conv)
}
