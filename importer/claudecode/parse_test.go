package claudecode_test

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
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

const transcripts = "../../../shared/transcripts"

// files returns every Claude Code file of the real transcripts.
func files(t *testing.T) []string {
	dir := filepath.Join(importtest.Transcripts(t, transcripts), "claude-code")
	return importtest.Files(t, dir, "*.jsonl", "*/*.jsonl", "*/*/subagents/*.jsonl")
}

func parse(t testing.TB, data []byte) *importer.Transcript {
	t.Helper()
	tr, err := claudecode.Parse(bytes.NewReader(data), claudecode.Options{})
	require.NoError(t, err)
	require.True(t, tr.Report.Balanced(), "every line is used or skipped: %+v", tr.Report)
	return tr
}

// TestImportRealTranscripts imports every Claude Code file and checks the
// session against the file as read independently.
func TestImportRealTranscripts(t *testing.T) {
	for _, path := range files(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			tr := parse(t, data)
			want := importtest.ReadClaudeCode(t, data)

			require.Equal(t, int64(bytes.Count(data, []byte("\n"))), tr.Report.Lines)
			require.Equal(t, int64(len(data)), tr.Report.Bytes)
			require.Equal(t, want.SessionID, tr.SourceID)
			require.Equal(t, want.LastModel, tr.ModelID)
			require.Equal(t, int64(want.Merged), tr.Report.Merged)
			require.Equal(t, tr.Report.Messages, len(tr.Messages))

			s, revisions := importtest.Build(t, tr)
			require.GreaterOrEqual(t, revisions, want.Prompts, "at least one revision per turn")
			importtest.CheckClaudeCode(t, want, s)
			title, prov := s.Title()
			require.NotEmpty(t, title)
			require.Equal(t, session.TitleFirstPrompt, prov)
			require.Equal(t, tr.Workspace, s.Workspace())
			require.NotEmpty(t, s.Workspace().Project)
			o := s.Origin()
			require.Equal(t, claudecode.Tool, o.Tool)
			require.Equal(t, tr.Report.SHA256, o.SHA256)
		})
	}
}

// TestSubagentsLinked loads the 2.1 session with its sub-agent files: the
// sub-agent hangs off the Task call that spawned it, with its agent type
// as its role; the compaction summarizer hangs off no call.
func TestSubagentsLinked(t *testing.T) {
	dir := filepath.Join(importtest.Transcripts(t, transcripts), "claude-code", "v2.1.39-compaction-progress")
	main := importtest.Files(t, dir, "*.jsonl")[0]
	tr, err := claudecode.Load(os.DirFS(dir), filepath.Base(main), claudecode.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Children, 2)

	// Independently: the Task result that names each agent.
	data, err := os.ReadFile(main)
	require.NoError(t, err)
	spawnedBy, roleOf := map[string]string{}, map[string]string{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var o struct {
			ToolUseResult struct {
				AgentID string `json:"agentId"`
			} `json:"toolUseResult"`
		}
		if json.Unmarshal(line, &o) != nil {
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(line, &m)
		msg, _ := m["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			bm := b.(map[string]any)
			if bm["type"] == "tool_use" && bm["name"] == "Task" {
				roleOf[bm["id"].(string)] = bm["input"].(map[string]any)["subagent_type"].(string)
			}
			if bm["type"] == "tool_result" && o.ToolUseResult.AgentID != "" {
				spawnedBy[o.ToolUseResult.AgentID] = bm["tool_use_id"].(string)
			}
		}
	}
	for _, c := range tr.Children {
		require.Equal(t, tr.SourceID, c.SourceID, "a sub-agent's lines carry its parent's session ID")
		require.NotEmpty(t, c.AgentID)
		require.NotNil(t, c.Link)
		if strings.HasPrefix(c.AgentID, "acompact") {
			require.Equal(t, claudecode.RoleCompaction, c.Link.Role)
			require.Empty(t, c.Link.ToolCallID)
			continue
		}
		call := spawnedBy[c.AgentID]
		require.NotEmpty(t, call)
		require.Equal(t, call, c.Link.ToolCallID)
		require.Equal(t, roleOf[call], c.Link.Role)

		cfg := c.Config(c.SessionID(), importtest.Env)
		require.Equal(t, session.KindSubagent, cfg.Kind)
		require.Equal(t, call, cfg.Relationship.ToolCallID)
		child, _ := importtest.Build(t, c)
		require.Equal(t, c.AgentID, child.Origin().AgentID)
		require.NotEqual(t, tr.SessionID(), c.SessionID(), "a sub-agent is a session of its own")
	}
}

// TestDamagedCopies imports damaged copies of every file: the damage is
// reported, nothing fails, and the conversation is the clean one (or, for
// a torn last line, the one without that line).
func TestDamagedCopies(t *testing.T) {
	for _, path := range files(t) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		clean := parse(t, data)
		copies, want := importtest.Damaged(data)
		for name, damaged := range copies {
			t.Run(filepath.Base(path)+"/"+name, func(t *testing.T) {
				tr := parse(t, damaged)
				require.Equal(t, int64(len(damaged)), tr.Report.Bytes)
				reference := clean
				if reason := want[name]; reason != "" {
					require.Positive(t, tr.Report.Skipped[reason], "the damage is reported as %s", reason)
				}
				switch name {
				case "torn-last-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipTorn])
					lines := bytes.SplitAfter(data, []byte("\n"))
					reference = parse(t, bytes.Join(lines[:len(lines)-2], nil))
				case "garbage-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipInvalidJSON])
				case "duplicated-tail":
					added := tr.Report.Lines - clean.Report.Lines
					require.Positive(t, added)
					require.Equal(t, added, tr.Report.Skipped[importer.SkipDuplicate]-clean.Report.Skipped[importer.SkipDuplicate],
						"every line written again is a duplicate")
				}
				importtest.SameConversation(t, reference.Messages, tr.Messages, name)
			})
		}
	}
}

// FuzzParse feeds arbitrary lines: the converter never panics, counts every
// line once, and produces a transcript whose revisions are valid sessions.
func FuzzParse(f *testing.F) {
	if dir := importtest.Lookup(transcripts); dir != "" {
		importtest.Seeds(f, filepath.Join(dir, "claude-code"), "*.jsonl", "*/*.jsonl", "*/*/subagents/*.jsonl")
	}
	f.Add([]byte(`{"type":"assistant","uuid":"a","message":{"id":"m","content":[{"type":"text","text":"x"}]}}` + "\n" +
		`{"type":"assistant","uuid":"b","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`))
	f.Add([]byte("\ufeff{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\r\n{\"type\":"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := claudecode.Parse(bytes.NewReader(data), claudecode.Options{MaxLineBytes: 1 << 16})
		require.NoError(t, err)
		require.True(t, tr.Report.Balanced(), "%+v", tr.Report)
		require.Equal(t, int64(len(data)), tr.Report.Bytes)
		lines := int64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		require.Equal(t, lines, tr.Report.Lines)
		importtest.Build(t, tr)
		for _, c := range tr.Children {
			importtest.Build(t, c)
		}
	})
}
