package sessnap_test

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// fullSessionV2 sets every field schema 2 adds: an imported sub-agent with
// labels, a workspace whose branch changed, an origin, and messages with
// IDs, usage, reasoning, provider-run tools, structured and nested tool
// results, an error reply and a compaction summary.
func fullSessionV2() *session.Session {
	cfg := sessiontest.Config("01JDCANONV2FULL")
	cfg.Kind = session.KindSubagent
	cfg.Relationship = session.SessionRelationship{ParentID: "01JDPARENT", RootID: "01JDPARENT", Role: "general-purpose", ToolCallID: "toolu_01Task"}
	cfg.Labels = map[string]string{"team": "tools", "git.remote": "git@example.com:app.git", "pinned": "", "drop-me": "x"}
	cfg.Workspace = session.Workspace{Project: "/src/app", Dir: "/src/app", Branch: "main"}
	cfg.Origin = &session.Origin{
		Tool: "claude-code", SessionID: "258c7280-ae70-4798-800f-63464d01a85d", AgentID: "a881341",
		Path: "-src-app/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl", Version: "2.1.39",
		Lines: 10, Bytes: 131721, SHA256: strings.Repeat("0123456789abcdef", 4),
	}
	s, err := session.New(cfg)
	must(err)
	at := sessiontest.Epoch
	must(s.AppendMessage(session.Message{ID: "u0", Role: session.RoleUser, Injected: true, CreatedAt: at,
		Parts: []session.Part{{Type: session.PartText, Text: "<system-reminder>hooks ran</system-reminder>"}}}))
	must(s.AppendMessage(session.Message{ID: "u1", Role: session.RoleUser, CreatedAt: at.Add(time.Second),
		Parts: []session.Part{{Type: session.PartText, Text: "Find the hook contract"}}}))
	must(s.SetTitle("Find the hook contract", session.TitleFirstPrompt))
	must(s.BeginTurn())
	usage := session.Usage{InputTokens: 3, OutputTokens: 41, CacheReadTokens: 12118, CacheWriteTokens: 9923}
	must(s.AppendMessage(session.Message{ID: "a1", Role: session.RoleAssistant, ResponseID: "msg_013qape6", Model: "claude-sonnet-4-5",
		Usage: &usage, CreatedAt: at.Add(2 * time.Second), Parts: []session.Part{
			{Type: session.PartReasoning, Text: "The docs map lists hooks.", Signature: "EqECCkYIBRgCKkCq"},
			{Type: session.PartReasoning, Encrypted: "gAAAAABqAZLpDBVX"},
			{Type: session.PartText, Text: "Fetching the documentation."},
			{Type: session.PartToolCall, ToolCallID: "toolu_01Fetch", Name: "WebFetch", Input: json.RawMessage(`{"url":"https://example.com/hooks.md"}`)},
			{Type: session.PartToolCall, ToolCallID: "srvtoolu_01", Name: "web_search", Input: json.RawMessage(`{"query":"hook output"}`), ProviderExecuted: true},
			{Type: session.PartToolResult, ToolCallID: "srvtoolu_01", ProviderExecuted: true, Result: json.RawMessage(`[{"type":"web_search_result","url":"https://example.com"}]`)},
		}}))
	must(s.AddUsage(usage))
	must(s.RecordToolCall())
	must(s.AppendMessage(session.Message{ID: "u2", Role: session.RoleTool, CreatedAt: at.Add(3 * time.Second), Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "toolu_01Fetch", Result: json.RawMessage(`{"code":200,"bytes":5120}`), Content: []session.Part{
			{Type: session.PartText, Text: "# Hooks reference"},
			{Type: session.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			{Type: session.PartImage, URL: "https://example.com/diagram.svg"},
		}},
		{Type: session.PartToolResult, ToolCallID: "toolu_01Other", Output: "permission denied", IsError: true},
	}}))
	must(s.AppendMessage(session.Message{ID: "a2", Role: session.RoleAssistant, Model: "<synthetic>", Error: "API Error: 529 overloaded",
		CreatedAt: at.Add(4 * time.Second), Parts: []session.Part{{Type: session.PartText, Text: "API Error: 529 overloaded"}}}))
	must(s.AppendMessage(session.Message{ID: "u3", Role: session.RoleUser, Injected: true, CreatedAt: at.Add(5 * time.Second),
		Compaction: &session.Compaction{Trigger: session.CompactionAuto, PreTokens: 167094},
		Parts:      []session.Part{{Type: session.PartText, Text: "This session is being continued from a previous conversation."}}}))
	must(s.SetWorkspace(session.Workspace{Project: "/src/app", Dir: "/src/app/cmd", Branch: "feature/hooks"}))
	s.RemoveLabel("drop-me")
	return s
}

// labelledSession is an idle session that only adds labels and a
// workspace to what schema 1 had.
func labelledSession() *session.Session {
	cfg := sessiontest.Config("01JDCANONV2LABELS")
	cfg.Labels = map[string]string{"project": "app", "priority": "high"}
	cfg.Workspace = session.Workspace{Project: "/home/ada/src/app", Dir: "/home/ada/src/app", Branch: "main"}
	s, err := session.New(cfg)
	must(err)
	must(s.AppendMessage(session.TextMessage(session.RoleUser, "Refactor the parser", sessiontest.Epoch.Add(time.Second))))
	return s
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
