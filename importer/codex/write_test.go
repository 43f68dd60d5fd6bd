package codex_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

// TestRoundTrip imports every rollout, writes the session back as a
// rollout, and imports that: the same session comes back, labels and
// effort too.
func TestRoundTrip(t *testing.T) {
	for _, path := range files(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			first := parse(t, data)
			write := func(w io.Writer, s *session.Session) error { return codex.Write(w, s, codex.WriteOptions{}) }
			again, out := importtest.RoundTrip(t, first, write, parse)
			checkShape(t, out)
			require.Equal(t, first.Labels, again.Labels)
			require.Equal(t, first.ReasoningEffort, again.ReasoningEffort)
		})
	}
}

// checkShape checks the written lines against the structure FORMATS.md
// describes, read as plain maps: {timestamp, type, payload} lines, the
// first a session_meta; response items of the known types; calls and
// outputs paired by call_id; function arguments as JSON strings.
func checkShape(t *testing.T, data []byte) {
	calls := map[string]bool{}
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var o map[string]any
		require.NoError(t, json.Unmarshal(line, &o), "line %d", i+1)
		require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`, o["timestamp"])
		typ := o["type"].(string)
		if i == 0 {
			require.Equal(t, "session_meta", typ)
		}
		require.Contains(t, []string{"session_meta", "turn_context", "response_item", "event_msg", "compacted"}, typ)
		p := o["payload"].(map[string]any)
		if typ != "response_item" {
			continue
		}
		switch p["type"] {
		case "message":
			require.Contains(t, []string{"user", "assistant", "developer"}, p["role"])
			require.IsType(t, []any{}, p["content"])
		case "function_call":
			args, ok := p["arguments"].(string)
			require.True(t, ok, "arguments are a JSON string")
			require.True(t, json.Valid([]byte(args)))
			calls[p["call_id"].(string)] = true
		case "custom_tool_call":
			require.IsType(t, "", p["input"])
			calls[p["call_id"].(string)] = true
		case "function_call_output", "custom_tool_call_output":
			require.True(t, calls[p["call_id"].(string)], "output %s follows its call", p["call_id"])
		case "reasoning", "web_search_call":
		default:
			t.Fatalf("line %d: response item %v", i+1, p["type"])
		}
	}
}

// TestWriteTitle: a thread's name is its explicit title, both ways.
func TestWriteTitle(t *testing.T) {
	src := `{"timestamp":"2026-05-11T08:00:00Z","type":"session_meta","payload":{"id":"t-1","cwd":"/w"}}
{"timestamp":"2026-05-11T08:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}}
{"timestamp":"2026-05-11T08:00:02Z","type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"t-1","thread_name":"Deploy fix"}}
`
	first := parse(t, []byte(src))
	require.Equal(t, "Deploy fix", first.Title)
	require.Equal(t, session.TitleExplicit, first.TitleProvenance)
	again, _ := importtest.RoundTrip(t, first, func(w io.Writer, s *session.Session) error { return codex.Write(w, s, codex.WriteOptions{}) }, parse)
	require.Equal(t, "Deploy fix", again.Title)
}

// TestWriteKeepsStructure writes the hostile session (importtest) as a
// rollout and reads it back, independently and with Parse: its content
// makes no line of its own. Structured results shaped as a typed prompt,
// an error and a thread name are no events (a Codex reader would take the
// first for a prompt the user typed), a tool run's result is its call's
// event and no other's, and a prompt and reply said twice at one instant
// are two messages each. The conversation comes back as it was, less the
// structured results Codex has no place for.
func TestWriteKeepsStructure(t *testing.T) {
	msgs := importtest.HostileMessages()
	want := make([]session.Message, len(msgs))
	for i := range msgs {
		// A rollout keeps no response IDs; without item IDs, equal
		// messages at one instant would be equal lines.
		msgs[i].ID, msgs[i].ResponseID = "", ""
		want[i] = msgs[i].Clone()
		for j, p := range want[i].Parts {
			if len(p.Result) > 0 && !strings.Contains(string(p.Result), `"exec_command_end"`) {
				want[i].Parts[j].Result = nil
			}
		}
	}
	s := importtest.HostileSession(t, msgs)
	var b bytes.Buffer
	require.NoError(t, codex.Write(&b, s, codex.WriteOptions{}))
	out := b.Bytes()
	checkShape(t, out)

	calls := map[string]bool{}
	var typed []string
	for i, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		var o struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		require.NoError(t, json.Unmarshal(line, &o), "line %d", i+1)
		p := o.Payload
		switch o.Type {
		case "response_item":
			if id, ok := p["call_id"].(string); ok && (p["type"] == "function_call" || p["type"] == "custom_tool_call") {
				calls[id] = true
			}
		case "event_msg":
			switch p["type"] {
			case "user_message":
				typed = append(typed, p["message"].(string))
			case "token_count":
			case "thread_name_updated":
				require.Equal(t, importtest.HostileTitle, p["thread_name"])
			case "exec_command_end", "patch_apply_end", "mcp_tool_call_end":
				require.True(t, calls[p["call_id"].(string)], "line %d: a tool run's event follows its call", i+1)
			default:
				t.Fatalf("line %d: an event no message of the session asks for: %s", i+1, line)
			}
		}
	}
	require.Equal(t, []string{importtest.HostileMessages()[0].Parts[0].Text, "yes", "yes"}, typed,
		"the prompts typed are the prompts a person typed, and no structured result")

	again := parse(t, out)
	importtest.SameConversation(t, want, again.Messages, "after a round trip")
	require.Equal(t, importtest.HostileTitle, again.Title)
	s2, _ := importtest.Build(t, again)
	importtest.CheckCodex(t, importtest.ReadCodex(out), s2)
}

// TestWriteRunEventOwnCall: a tool run's structured result is written as
// its own call's event, whatever call or kind it names: a key that
// differs from "call_id" or "type" only in case (Codex reads keys
// exactly, Parse regardless of case) is not written.
func TestWriteRunEventOwnCall(t *testing.T) {
	msgs := []session.Message{
		{Role: session.RoleUser, CreatedAt: importtest.HostileAt, Parts: []session.Part{{Type: session.PartText, Text: "go"}}},
		{Role: session.RoleAssistant, CreatedAt: importtest.HostileAt, Parts: []session.Part{
			{Type: session.PartToolCall, ToolCallID: "call_1", Name: "shell", Input: json.RawMessage(`{}`)},
			{Type: session.PartToolCall, ToolCallID: "call_2", Name: "shell", Input: json.RawMessage(`{}`)}}},
		{Role: session.RoleTool, CreatedAt: importtest.HostileAt, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "call_2",
			Result: json.RawMessage(`{"type":"exec_command_end","call_id":"call_1","CALL_ID":"call_1","Call_Id":"call_1","Type":"user_message","exit_code":0}`)}}},
	}
	var b bytes.Buffer
	require.NoError(t, codex.Write(&b, importtest.HostileSession(t, msgs), codex.WriteOptions{}))
	var events []map[string]any
	for _, line := range bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n")) {
		var o struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		require.NoError(t, json.Unmarshal(line, &o))
		if o.Type == "event_msg" && o.Payload["type"] == "exec_command_end" {
			events = append(events, o.Payload)
		}
	}
	require.Equal(t, []map[string]any{{"type": "exec_command_end", "call_id": "call_2", "exit_code": float64(0)}}, events)
	again := parse(t, b.Bytes())
	require.JSONEq(t, `{"type":"exec_command_end","exit_code":0}`, string(again.Messages[2].Parts[0].Result))
}

// TestWriteOneLinePerValue: every line written is a JSON value of its own
// for a reader that ends lines at any line separator: NEL (U+0085), which
// encoding/json leaves raw in strings, is escaped like the others.
func TestWriteOneLinePerValue(t *testing.T) {
	s := importtest.HostileSession(t, importtest.HostileMessages())
	var b bytes.Buffer
	require.NoError(t, codex.Write(&b, s, codex.WriteOptions{}))
	lines := regexp.MustCompile("\r\n|[\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029]").Split(strings.TrimSuffix(b.String(), "\n"), -1)
	require.Len(t, lines, bytes.Count(b.Bytes(), []byte("\n")), "as many lines as values")
	for i, line := range lines {
		require.True(t, json.Valid([]byte(line)), "line %d: %q", i+1, line)
	}
}
