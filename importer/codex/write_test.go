package codex_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
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
