package claudecode_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

// TestRoundTrip imports every file, writes the session back as a Claude
// Code transcript, and imports that: the same session comes back.
func TestRoundTrip(t *testing.T) {
	for _, path := range files(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			first := parse(t, data)
			write := func(w io.Writer, s *session.Session) error {
				return claudecode.Write(w, s, claudecode.WriteOptions{AgentID: first.AgentID})
			}
			again, out := importtest.RoundTrip(t, first, write, parse)
			checkShape(t, out)
			require.Empty(t, again.Report.Skipped, "what Write writes is all used")
		})
	}
}

// checkShape checks the written lines against the structure FORMATS.md
// describes, read as plain maps: every line an object with a type;
// conversational lines with uuid, parentUuid chaining to the line before,
// sessionId and an ISO-8601 timestamp; user and assistant lines with a
// message of the right role; the lines of one response sharing message.id.
func checkShape(t *testing.T, data []byte) {
	var prev any
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var o map[string]any
		require.NoError(t, json.Unmarshal(line, &o), "line %d", i+1)
		typ, _ := o["type"].(string)
		require.NotEmpty(t, typ, "line %d", i+1)
		if typ == "summary" || typ == "custom-title" {
			continue
		}
		require.Contains(t, []string{"user", "assistant", "system"}, typ)
		require.NotEmpty(t, o["uuid"], "line %d", i+1)
		require.NotEmpty(t, o["sessionId"], "line %d", i+1)
		ts, _ := o["timestamp"].(string)
		require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`, ts)
		if o["subtype"] != "compact_boundary" {
			require.Equal(t, prev, o["parentUuid"], "line %d chains to the one before", i+1)
		}
		prev = o["uuid"]
		if typ == "system" {
			continue
		}
		msg := o["message"].(map[string]any)
		require.Equal(t, typ, msg["role"])
		if typ == "assistant" {
			require.NotEmpty(t, msg["id"])
			require.Len(t, msg["content"], 1, "one content block a line")
		}
	}
}

// TestRoundTripSubagents writes the 2.1 session and its sub-agents as
// Claude Code lays them out and loads them back: the same children, linked
// to the same calls.
func TestRoundTripSubagents(t *testing.T) {
	dir := filepath.Join(importtest.Transcripts(t, transcripts), "claude-code", "v2.1.39-compaction-progress")
	name := filepath.Base(importtest.Files(t, dir, "*.jsonl")[0])
	first, err := claudecode.Load(os.DirFS(dir), name, claudecode.Options{})
	require.NoError(t, err)

	out := t.TempDir()
	s, _ := importtest.Build(t, first)
	writeFile(t, filepath.Join(out, name), s, claudecode.WriteOptions{})
	for _, c := range first.Children {
		cs, _ := importtest.Build(t, c)
		writeFile(t, filepath.Join(out, first.SourceID, "subagents", "agent-"+c.AgentID+".jsonl"), cs,
			claudecode.WriteOptions{SessionID: first.SourceID, AgentID: c.AgentID})
	}
	again, err := claudecode.Load(os.DirFS(out), name, claudecode.Options{})
	require.NoError(t, err)
	require.Len(t, again.Children, len(first.Children))
	for i, c := range first.Children {
		a := again.Children[i]
		require.Equal(t, c.AgentID, a.AgentID)
		require.Equal(t, *c.Link, *a.Link)
		importtest.SameConversation(t, c.Messages, a.Messages, "sub-agent "+c.AgentID)
	}
}

func writeFile(t *testing.T, path string, s *session.Session, opts claudecode.WriteOptions) {
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	var b bytes.Buffer
	require.NoError(t, claudecode.Write(&b, s, opts))
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// TestWriteTitles: a title the session was given or that was generated
// for it survives a round trip with its provenance; a first prompt's is
// derived again.
func TestWriteTitles(t *testing.T) {
	src := env("user", "u1", `"message":{"role":"user","content":"fix the parser"}`)
	for _, prov := range []session.TitleProvenance{session.TitleExplicit, session.TitleGenerated, session.TitleFirstPrompt} {
		t.Run(string(prov), func(t *testing.T) {
			s, _ := importtest.Build(t, parse(t, []byte(src)))
			title := "fix the parser"
			if prov != session.TitleFirstPrompt {
				title = "Parser fixes (" + string(prov) + ")"
			}
			require.NoError(t, s.SetTitle(title, prov))
			var b bytes.Buffer
			require.NoError(t, claudecode.Write(&b, s, claudecode.WriteOptions{}))
			again := parse(t, b.Bytes())
			require.Equal(t, title, again.Title)
			require.Equal(t, prov, again.TitleProvenance)
		})
	}
}

// TestWriteKeepsStructure writes the hostile session (importtest) as a
// Claude Code transcript and reads it back, independently and with Parse:
// the same conversation, message for message, structured results and
// all; its content makes no line of its own.
func TestWriteKeepsStructure(t *testing.T) {
	msgs := importtest.HostileMessages()
	s := importtest.HostileSession(t, msgs)
	var b bytes.Buffer
	require.NoError(t, claudecode.Write(&b, s, claudecode.WriteOptions{}))
	checkShape(t, b.Bytes())
	again := parse(t, b.Bytes())
	require.Empty(t, again.Report.Skipped, "every line written is used")
	require.Empty(t, again.Report.Dropped)
	importtest.SameConversation(t, msgs, again.Messages, "after a round trip")
	require.Equal(t, importtest.HostileTitle, again.Title)
	s2, _ := importtest.Build(t, again)
	importtest.CheckClaudeCode(t, importtest.ReadClaudeCode(t, b.Bytes()), s2)
}

// TestWriteKeepsMessagesApart: IDs a session holds never make two of its
// messages one. Parse takes a line whose uuid it has seen for a copy, and
// joins the assistant lines that share message.id after a prompt into one
// response; so a message whose ID is the uuid the writer derived for
// another message's line (read from a first export), and two responses
// under one response ID, must still come back as messages of their own.
func TestWriteKeepsMessagesApart(t *testing.T) {
	at := importtest.HostileAt
	text := func(s string) []session.Part { return []session.Part{{Type: session.PartText, Text: s}} }
	write := func(msgs []session.Message) []byte {
		var b bytes.Buffer
		require.NoError(t, claudecode.Write(&b, importtest.HostileSession(t, msgs), claudecode.WriteOptions{}))
		return b.Bytes()
	}
	uuids := func(data []byte) []string {
		var out []string
		for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			var o struct {
				UUID string `json:"uuid"`
			}
			require.NoError(t, json.Unmarshal(line, &o))
			out = append(out, o.UUID)
		}
		return out
	}
	// A response of two blocks (two lines), a compaction (a boundary line
	// and its summary) and a message without an ID.
	base := []session.Message{
		{ID: "p1", Role: session.RoleUser, CreatedAt: at, Parts: text("go")},
		{ID: "a1", ResponseID: "msg_1", Role: session.RoleAssistant, CreatedAt: at, Parts: []session.Part{
			{Type: session.PartText, Text: "one"}, {Type: session.PartText, Text: "two"}}},
		{ID: "c1", Role: session.RoleUser, Injected: true, Compaction: &session.Compaction{}, CreatedAt: at, Parts: text("summary")},
		{Role: session.RoleSystem, CreatedAt: at, Parts: text("note")},
	}
	derived := uuids(write(base))
	require.Len(t, derived, 7) // and the title line, which has none
	same := func(t *testing.T, want []session.Message, got *importer.Transcript) {
		t.Helper()
		require.Len(t, got.Messages, len(want))
		for i, m := range got.Messages {
			require.Equal(t, want[i].Role, m.Role, "message %d", i)
			require.Equal(t, want[i].Parts, m.Parts, "message %d", i)
			if want[i].ID != "" {
				require.Equal(t, want[i].ID, m.ID, "message %d", i)
			}
		}
	}
	for _, taken := range []string{derived[2], derived[3], derived[5]} { // the second block, the boundary, the ID-less message
		t.Run("id "+taken, func(t *testing.T) {
			msgs := append(append([]session.Message(nil), base...),
				session.Message{ID: taken, Role: session.RoleUser, CreatedAt: at, Parts: text("mine")})
			same(t, msgs, parse(t, write(msgs)))
		})
	}
	t.Run("one response ID", func(t *testing.T) {
		msgs := []session.Message{
			{ID: "p1", Role: session.RoleUser, CreatedAt: at, Parts: text("go")},
			{ID: "a1", ResponseID: "msg_1", Role: session.RoleAssistant, CreatedAt: at, Parts: []session.Part{
				{Type: session.PartToolCall, ToolCallID: "t1", Name: "Bash", Input: json.RawMessage(`{}`)}}},
			{ID: "r1", Role: session.RoleTool, CreatedAt: at, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "t1", Output: "x"}}},
			{ID: "a2", ResponseID: "msg_1", Role: session.RoleAssistant, CreatedAt: at, Parts: text("done")},
			{ID: "a3", ResponseID: "msg_1", Role: session.RoleAssistant, CreatedAt: at, Parts: text("again")},
		}
		again := parse(t, write(msgs))
		same(t, msgs, again)
		require.Equal(t, "msg_1", again.Messages[1].ResponseID, "the first keeps its response ID")
	})
}
