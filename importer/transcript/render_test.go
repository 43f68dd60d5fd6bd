package transcript_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/importer/transcript"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

func imported(t *testing.T) map[string]*session.Session {
	dir := importtest.Transcripts(t, "../../../shared/transcripts")
	out := map[string]*session.Session{}
	for _, path := range importtest.Files(t, dir, "claude-code/*.jsonl", "claude-code/*/*.jsonl", "codex/*.jsonl") {
		f, err := os.Open(path)
		require.NoError(t, err)
		var s *session.Session
		if strings.Contains(path, "codex") {
			tr, err := codex.Parse(f, codex.Options{})
			require.NoError(t, err)
			s, _ = importtest.Build(t, tr)
		} else {
			tr, err := claudecode.Parse(f, claudecode.Options{})
			require.NoError(t, err)
			s, _ = importtest.Build(t, tr)
		}
		require.NoError(t, f.Close())
		out[filepath.Base(path)] = s
	}
	return out
}

// TestRenderRealTranscripts renders every imported transcript both ways
// and checks, against the session, that every message is there with its
// role and time, every tool call and result is folded to one line with
// its size, every image is named with its type and size, and reasoning is
// marked.
func TestRenderRealTranscripts(t *testing.T) {
	for name, s := range imported(t) {
		for _, format := range []string{"markdown", "text"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				var b bytes.Buffer
				opts := transcript.Options{FoldBytes: 100}
				if format == "markdown" {
					require.NoError(t, transcript.WriteMarkdown(&b, s, opts))
				} else {
					require.NoError(t, transcript.WriteText(&b, s, opts))
				}
				out := b.String()
				if format == "markdown" {
					// What CommonMark shows of a backslash-escaped character.
					out = regexp.MustCompile("\\\\([!-/:-@\\[-`{-~])").ReplaceAllString(out, "$1")
				}
				title, _ := s.Title()
				require.True(t, strings.HasPrefix(out, "# "+title) == (format == "markdown"))
				require.Contains(t, out, title)
				header := regexp.MustCompile(`^## (User|Assistant|System|Tool)( \((compaction summary|error|injected)\))?( · |$)`)
				if format == "text" {
					header = regexp.MustCompile(`^(USER|ASSISTANT|SYSTEM|TOOL)( \((COMPACTION SUMMARY|ERROR|INJECTED)\))?( · |$)`)
				}
				headers, calls, results, images, reasoning := 0, 0, 0, 0, 0
				for _, line := range strings.Split(out, "\n") {
					switch {
					case header.MatchString(line):
						headers++
					case strings.Contains(line, "tool call]") || strings.Contains(line, "tool call*"):
						calls++
						require.Regexp(t, `\(\d+(\.\d)? (B|KiB|MiB), `, line, "a call shows its input's size")
					case strings.Contains(line, "tool result]") || strings.Contains(line, "tool result*"):
						results++
						require.Regexp(t, `(ok|error) for \S+: \d+(\.\d)? (B|KiB|MiB), \d+ lines?`, line)
						require.LessOrEqual(t, len(line), 400, "a result is folded")
					case strings.Contains(line, "image]") || strings.Contains(line, "image*"):
						images++
						require.Regexp(t, `image/\w+, \d+(\.\d)? (B|KiB|MiB)`, line)
					case strings.Contains(line, "reasoning]") || strings.Contains(line, "reasoning*"):
						reasoning++
					}
				}
				var wantCalls, wantResults, wantImages, wantReasoning int
				for _, m := range s.Conversation() {
					require.Contains(t, out, m.CreatedAt.UTC().Format("2006-01-02 15:04:05"), "every message shows its time")
					for _, p := range m.Parts {
						switch p.Type {
						case session.PartToolCall:
							wantCalls++
							require.Contains(t, out, p.Name)
						case session.PartToolResult:
							wantResults++
							for _, c := range p.Content {
								if c.Type == session.PartImage {
									wantImages++
								}
							}
						case session.PartImage:
							wantImages++
						case session.PartReasoning:
							wantReasoning++
						}
					}
				}
				require.Equal(t, s.MessageCount(), headers, "a header per message")
				require.Equal(t, wantCalls, calls)
				require.Equal(t, wantResults, results)
				require.Equal(t, wantImages, images)
				require.Equal(t, wantReasoning, reasoning)
				if format == "text" {
					md := regexp.MustCompile(`(?m)^(## |- \*\*|- \*(tool|image|reasoning))`)
					require.False(t, md.MatchString(out), "plain text has none of the Markdown's own markup")
				}
			})
		}
	}
}

func ExampleWriteText() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, _ := session.New(session.Config{ID: "s1", CreatedAt: at, Kind: session.KindPrimary, ProviderID: "anthropic", ModelID: "claude",
		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: "laptop", Revision: "1"},
		Workspace:      session.Workspace{Project: "/src/app", Dir: "/src/app", Branch: "main"}})
	_ = s.SetTitle("List the files", session.TitleFirstPrompt)
	_ = s.AppendMessage(session.Message{Role: session.RoleUser, CreatedAt: at, Parts: []session.Part{
		{Type: session.PartText, Text: "List the files"},
		{Type: session.PartImage, MediaType: "image/png", Data: make([]byte, 2048)},
	}})
	_ = s.BeginTurn()
	u := session.Usage{InputTokens: 12, OutputTokens: 4}
	_ = s.AppendMessage(session.Message{Role: session.RoleAssistant, CreatedAt: at.Add(time.Second), Model: "claude", Usage: &u, Parts: []session.Part{
		{Type: session.PartReasoning, Text: "The user wants a listing.", Signature: "sig"},
		{Type: session.PartToolCall, ToolCallID: "t1", Name: "Bash", Input: json.RawMessage(`{"command": "ls"}`)},
	}})
	_ = s.AppendMessage(session.Message{Role: session.RoleTool, CreatedAt: at.Add(2 * time.Second), Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "t1", Output: "a.go\nb.go\n"},
	}})
	_ = s.EndTurn()
	_ = transcript.WriteText(os.Stdout, s, transcript.Options{})
	fmt.Println("--")
	_ = transcript.WriteMarkdown(os.Stdout, s, transcript.Options{})
	// Output:
	// List the files
	// ==============
	//
	// Session: s1, idle, created 2026-01-02 03:04:05 UTC
	// Workspace: /src/app, branch main
	// Model: anthropic claude
	//
	// USER · 2026-01-02 03:04:05 UTC
	//   List the files
	//   [image] image/png, 2.0 KiB
	//
	// ASSISTANT · 2026-01-02 03:04:06 UTC · claude · 12 in, 4 out, 0 cache read, 0 cache write tokens
	//   [reasoning] The user wants a listing. (25 B)
	//   [tool call] Bash {"command":"ls"} (17 B, t1)
	//
	// TOOL · 2026-01-02 03:04:07 UTC
	//   [tool result] ok for t1: 10 B, 2 lines: a.go b.go
	// --
	// # List the files
	//
	// - **Session:** s1, idle, created 2026-01-02 03:04:05 UTC
	// - **Workspace:** /src/app, branch main
	// - **Model:** anthropic claude
	//
	// ## User · 2026-01-02 03:04:05 UTC
	//
	// ```
	// List the files
	// ```
	// - *image* image/png, 2.0 KiB
	//
	// ## Assistant · 2026-01-02 03:04:06 UTC · claude · 12 in, 4 out, 0 cache read, 0 cache write tokens
	//
	// - *reasoning* The user wants a listing. (25 B)
	// - *tool call* Bash {"command":"ls"} (17 B, t1)
	//
	// ## Tool · 2026-01-02 03:04:07 UTC
	//
	// - *tool result* ok for t1: 10 B, 2 lines: a.go b.go
}
