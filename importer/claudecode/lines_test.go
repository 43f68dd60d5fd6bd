package claudecode_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

// env wraps a line body in the envelope fields Claude Code writes.
func env(typ, uuid, body string) string {
	return `{"type":"` + typ + `","uuid":"` + uuid + `","sessionId":"s1","timestamp":"2026-01-02T03:04:05Z","cwd":"/src/app","version":"2.1.0",` + body + "}\n"
}

// TestLineKinds converts one small transcript per kind of line and checks
// the message it gives, and what the report says about it.
func TestLineKinds(t *testing.T) {
	tests := []struct {
		name        string
		src         string
		check       func(t *testing.T, m []session.Message)
		wantDropped string
		wantSkipped importer.Reason
	}{
		{name: "api error reply", src: env("assistant", "a1", `"isApiErrorMessage":true,"message":{"id":"m1","model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 overloaded"}]}`),
			check: func(t *testing.T, m []session.Message) {
				require.Equal(t, "API Error: 529 overloaded", m[0].Error)
				require.Equal(t, "<synthetic>", m[0].Model)
			}},
		{name: "system api_error", src: env("system", "e1", `"subtype":"api_error","error":{"error":{"message":"rate limited"}},"retryInMs":500`),
			check: func(t *testing.T, m []session.Message) {
				require.Equal(t, session.RoleSystem, m[0].Role)
				require.Equal(t, "rate limited", m[0].Error)
			}},
		{name: "redacted thinking", src: env("assistant", "a1", `"message":{"id":"m1","content":[{"type":"redacted_thinking","data":"Enc0"},{"type":"thinking","thinking":"","signature":"sig"}]}`),
			check: func(t *testing.T, m []session.Message) {
				require.Equal(t, session.Part{Type: session.PartReasoning, Encrypted: "Enc0"}, m[0].Parts[0])
				require.Equal(t, session.Part{Type: session.PartReasoning, Signature: "sig"}, m[0].Parts[1])
			}},
		{name: "server tool and its result", src: env("assistant", "a1", `"message":{"id":"m1","content":[{"type":"server_tool_use","id":"srv1","name":"web_search","input":{"query":"go"}},{"type":"web_search_tool_result","tool_use_id":"srv1","content":[{"type":"web_search_result","url":"https://go.dev"}]}]}`),
			check: func(t *testing.T, m []session.Message) {
				require.True(t, m[0].Parts[0].ProviderExecuted)
				require.True(t, m[0].Parts[1].ProviderExecuted)
				require.Equal(t, session.PartToolResult, m[0].Parts[1].Type)
				require.JSONEq(t, `[{"type":"web_search_result","url":"https://go.dev"}]`, string(m[0].Parts[1].Result))
			}},
		{name: "images and documents", src: env("user", "u1", `"message":{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://e.x/a.png"}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERg=="}},{"type":"text","text":"see"}]}`),
			check: func(t *testing.T, m []session.Message) {
				require.Equal(t, "https://e.x/a.png", m[0].Parts[0].URL)
				require.Equal(t, session.Part{Type: session.PartBlob, MediaType: "application/pdf", Data: []byte("%PDF")}, m[0].Parts[1])
			}},
		{name: "tool result with an image", src: env("user", "u1", `"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"shot"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"tool_reference","tool_name":"Read"}]}]}`),
			wantDropped: "block tool_reference in a tool_result",
			check: func(t *testing.T, m []session.Message) {
				require.Equal(t, session.RoleTool, m[0].Role)
				p := m[0].Parts[0]
				require.True(t, p.IsError)
				require.Len(t, p.Content, 2)
				require.Equal(t, "image/png", p.Content[1].MediaType)
			}},
		{name: "unknown block", src: env("assistant", "a1", `"message":{"id":"m1","content":[{"type":"hologram"},{"type":"text","text":"x"}]}`),
			wantDropped: "block hologram",
			check:       func(t *testing.T, m []session.Message) { require.Len(t, m[0].Parts, 1) }},
		{name: "unknown field", src: env("user", "u1", `"mood":"good","message":{"role":"user","content":"hi"}`),
			wantDropped: "field user.mood",
			check:       func(t *testing.T, m []session.Message) { require.Len(t, m, 1) }},
		{name: "unknown line type", src: `{"type":"hologram","uuid":"h1"}` + "\n" + env("user", "u1", `"message":{"role":"user","content":"hi"}`),
			wantSkipped: importer.SkipUnknownType,
			check:       func(t *testing.T, m []session.Message) { require.Len(t, m, 1) }},
		{name: "user line without content", src: env("user", "u1", `"message":{"role":"user","content":[]}`),
			wantSkipped: importer.SkipInvalid,
			check:       func(t *testing.T, m []session.Message) { require.Empty(t, m) }},
		{name: "manual compaction", src: env("system", "b1", `"subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":1200}`) +
			env("user", "u1", `"isCompactSummary":true,"message":{"role":"user","content":"Summary: …"}`),
			check: func(t *testing.T, m []session.Message) {
				require.Len(t, m, 1)
				require.Equal(t, &session.Compaction{Trigger: session.CompactionManual, PreTokens: 1200}, m[0].Compaction)
				require.True(t, m[0].Injected)
			}},
		{name: "meta prompt", src: env("user", "u1", `"isMeta":true,"message":{"role":"user","content":"Caveat: local commands"}`),
			check: func(t *testing.T, m []session.Message) { require.True(t, m[0].Injected) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := parse(t, []byte(tt.src))
			tt.check(t, tr.Messages)
			if tt.wantDropped != "" {
				require.Equal(t, int64(1), tr.Report.Dropped[tt.wantDropped], "%v", tr.Report.Dropped)
			}
			if tt.wantSkipped != "" {
				require.Equal(t, int64(1), tr.Report.Skipped[tt.wantSkipped])
			}
			importtest.Build(t, tr)
		})
	}
}

// TestInlineSidechain: a 1.0 sidechain (isSidechain lines without an
// agentId, rooted at a prompt equal to a Task call's) becomes a child
// linked to that call, and stays out of the parent's conversation.
func TestInlineSidechain(t *testing.T) {
	lines := []string{
		env("user", "u1", `"parentUuid":null,"message":{"role":"user","content":"review the parser"}`),
		env("assistant", "a1", `"parentUuid":"u1","message":{"id":"m1","content":[{"type":"tool_use","id":"task1","name":"Task","input":{"description":"review","prompt":"Read parser.go and list bugs","subagent_type":"reviewer"}}]}`),
		env("user", "s1", `"parentUuid":null,"isSidechain":true,"message":{"role":"user","content":"Read parser.go and list bugs"}`),
		env("assistant", "s2", `"parentUuid":"s1","isSidechain":true,"message":{"id":"m2","content":[{"type":"text","text":"Two bugs."}]}`),
		env("user", "r1", `"parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"task1","content":"Two bugs."}]}`),
	}
	tr := parse(t, []byte(strings.Join(lines, "")))
	require.Len(t, tr.Messages, 3)
	require.Len(t, tr.Children, 1)
	c := tr.Children[0]
	require.Len(t, c.Messages, 2)
	require.Equal(t, "s1", c.AgentID, "a 1.0 sidechain is named by its first line")
	require.Equal(t, importer.Link{ParentSourceID: "s1", ToolCallID: "task1", Role: "reviewer"}, *c.Link)
	require.Equal(t, "s1", c.SourceID)
	child, _ := importtest.Build(t, c)
	require.Equal(t, session.KindSubagent, child.Kind())
	require.Equal(t, "task1", child.Relationship().ToolCallID)
}
