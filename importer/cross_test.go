package importer_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

// gist is what both formats can say about a message: who said it (a
// compaction summary is one whatever its role), its text, its tool calls
// and its tool results.
type gist struct {
	Role    string
	Text    string
	Calls   []string
	Results []string
}

func gists(msgs []session.Message) []gist {
	out := make([]gist, 0, len(msgs))
	for _, m := range msgs {
		g := gist{Role: string(m.Role)}
		if m.Compaction != nil {
			g.Role = "compaction"
		}
		var texts []string
		for _, p := range m.Parts {
			switch p.Type {
			case session.PartText, session.PartReasoning:
				if p.Text != "" {
					texts = append(texts, p.Text)
				}
			case session.PartToolCall:
				var in bytes.Buffer
				_ = json.Compact(&in, p.Input)
				g.Calls = append(g.Calls, p.ToolCallID+" "+p.Name+" "+in.String())
			case session.PartToolResult:
				out := p.Output
				for _, c := range p.Content {
					out += c.Text
				}
				g.Results = append(g.Results, p.ToolCallID+" "+out)
			}
		}
		g.Text = strings.Join(texts, "\n")
		out = append(out, g)
	}
	return out
}

type format struct {
	name  string
	parse func([]byte) (*importer.Transcript, error)
	write func(*bytes.Buffer, *session.Session) error
}

var formats = []format{
	{"claude-code",
		func(b []byte) (*importer.Transcript, error) {
			return claudecode.Parse(bytes.NewReader(b), claudecode.Options{})
		},
		func(w *bytes.Buffer, s *session.Session) error {
			return claudecode.Write(w, s, claudecode.WriteOptions{})
		}},
	{"codex",
		func(b []byte) (*importer.Transcript, error) { return codex.Parse(bytes.NewReader(b), codex.Options{}) },
		func(w *bytes.Buffer, s *session.Session) error { return codex.Write(w, s, codex.WriteOptions{}) }},
}

// TestCrossFormat imports every real transcript and writes it in the
// other tool's format: imported again, every message keeps its role, text,
// tool calls and tool results. (Within one format the round trip keeps
// everything; see each package's TestRoundTrip.)
func TestCrossFormat(t *testing.T) {
	dir := importtest.Transcripts(t, "../../shared/transcripts")
	sources := map[string][]string{
		"claude-code": importtest.Files(t, dir, "claude-code/*.jsonl", "claude-code/*/*.jsonl", "claude-code/*/*/subagents/*.jsonl"),
		"codex":       importtest.Files(t, dir, "codex/*.jsonl"),
	}
	for i, from := range formats {
		to := formats[1-i]
		for _, path := range sources[from.name] {
			t.Run(from.name+"-to-"+to.name+"/"+filepath.Base(path), func(t *testing.T) {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				first, err := from.parse(data)
				require.NoError(t, err)
				s, _ := importtest.Build(t, first)
				var out bytes.Buffer
				require.NoError(t, to.write(&out, s))
				again, err := to.parse(out.Bytes())
				require.NoError(t, err)
				require.True(t, again.Report.Balanced())
				require.Equal(t, gists(first.Messages), gists(again.Messages))
				s2, _ := importtest.Build(t, again)
				require.Equal(t, s.Workspace(), s2.Workspace())
				require.Equal(t, s.Counters().ToolCalls, s2.Counters().ToolCalls)
			})
		}
	}
}
