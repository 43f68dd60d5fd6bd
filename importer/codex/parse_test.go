package codex_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

const transcripts = "../../../shared/transcripts"

func files(t testing.TB) []string {
	dir := filepath.Join(importtest.Transcripts(t, transcripts), "codex")
	return importtest.Files(t, dir, "*.jsonl")
}

func parse(t testing.TB, data []byte) *importer.Transcript {
	t.Helper()
	tr, err := codex.Parse(bytes.NewReader(data), codex.Options{})
	require.NoError(t, err)
	require.True(t, tr.Report.Balanced(), "every line is used or skipped: %+v", tr.Report)
	return tr
}

// TestImportRealTranscripts imports every Codex rollout and checks the
// session against the rollout as read independently.
func TestImportRealTranscripts(t *testing.T) {
	for _, path := range files(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			tr := parse(t, data)
			want := importtest.ReadCodex(data)

			require.Equal(t, int64(bytes.Count(data, []byte("\n"))), tr.Report.Lines)
			require.Equal(t, int64(len(data)), tr.Report.Bytes)
			require.Equal(t, want.ThreadID, tr.SourceID)
			require.Equal(t, want.Model, tr.ModelID)
			require.Equal(t, want.Effort, tr.ReasoningEffort)
			require.Equal(t, want.Cwd, tr.Workspace.Project)
			require.Equal(t, want.Branch, tr.Workspace.Branch)
			require.Equal(t, want.Remote, tr.Labels[codex.LabelGitRemote])

			s, revisions := importtest.Build(t, tr)
			require.GreaterOrEqual(t, revisions, want.Prompts)
			importtest.CheckCodex(t, want, s)
			title, prov := s.Title()
			require.NotEmpty(t, title)
			require.Equal(t, session.TitleFirstPrompt, prov)
			require.Equal(t, codex.Tool, s.Origin().Tool)
		})
	}
}

// TestDamagedCopies imports damaged copies of every rollout: the damage is
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
				if reason := want[name]; reason != "" {
					require.Positive(t, tr.Report.Skipped[reason], "the damage is reported as %s", reason)
				}
				reference := clean
				switch name {
				case "torn-last-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipTorn])
					lines := bytes.SplitAfter(data, []byte("\n"))
					reference = parse(t, bytes.Join(lines[:len(lines)-2], nil))
				case "garbage-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipInvalidJSON])
				case "duplicated-tail":
					added := tr.Report.Lines - clean.Report.Lines
					require.Equal(t, added, tr.Report.Skipped[importer.SkipDuplicate]-clean.Report.Skipped[importer.SkipDuplicate],
						"every line written again is a duplicate")
				}
				importtest.SameConversation(t, reference.Messages, tr.Messages, name)
			})
		}
	}
}

// TestPreEnvelopeRollout reads the oldest rollout shape: a bare meta
// line, state markers, and bare response items.
func TestPreEnvelopeRollout(t *testing.T) {
	src := `{"id":"0f1e2d3c","timestamp":"2025-06-01T10:00:00Z","instructions":"be brief","git":{"branch":"main"}}
{"record_type":"state"}
{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}
{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}
{"type":"function_call_output","call_id":"c1","output":"a.go\nb.go"}
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two files."}]}
`
	tr := parse(t, []byte(src))
	require.Equal(t, "0f1e2d3c", tr.SourceID)
	require.Equal(t, "main", tr.Workspace.Branch)
	require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipNotConversation])
	roles := []session.Role{}
	for _, m := range tr.Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []session.Role{session.RoleUser, session.RoleAssistant, session.RoleTool, session.RoleAssistant}, roles)
	require.JSONEq(t, `{"command":["ls"]}`, string(tr.Messages[1].Parts[0].Input))
	s, _ := importtest.Build(t, tr)
	require.Equal(t, "list files", func() string { title, _ := s.Title(); return title }())
}

// TestCompactionAndSubagent reads a remote compaction (the replacement
// history follows the compaction message), an error event, and a
// sub-agent's meta.
func TestCompactionAndSubagent(t *testing.T) {
	src := `{"timestamp":"2026-05-11T08:00:00Z","type":"session_meta","payload":{"id":"child-1","cwd":"/w","source":{"subagent":{"thread_spawn":{"parent_thread_id":"parent-1","depth":1,"agent_role":"worker"}}}}}
{"timestamp":"2026-05-11T08:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}}
{"timestamp":"2026-05-11T08:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"do it"}}
{"timestamp":"2026-05-11T08:00:02Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]},{"type":"compaction","encrypted_content":"gAAA"}]}}
{"timestamp":"2026-05-11T08:00:03Z","type":"event_msg","payload":{"type":"error","message":"stream disconnected"}}
`
	tr := parse(t, []byte(src))
	require.NotNil(t, tr.Link)
	require.Equal(t, "parent-1", tr.Link.ParentSourceID)
	require.Equal(t, "worker", tr.Link.Role)
	require.Len(t, tr.Messages, 4)
	c := tr.Messages[1]
	require.NotNil(t, c.Compaction)
	require.Equal(t, "gAAA", c.Parts[0].Encrypted)
	require.Equal(t, "do it", tr.Messages[2].Parts[0].Text, "the kept history follows the compaction")
	require.Equal(t, "stream disconnected", tr.Messages[3].Error)

	parent := parse(t, []byte(`{"timestamp":"2026-05-11T07:00:00Z","type":"session_meta","payload":{"id":"parent-1","cwd":"/w"}}
{"timestamp":"2026-05-11T07:00:01Z","type":"event_msg","payload":{"type":"collab_agent_spawn_end","call_id":"call-9","new_thread_id":"child-1"}}
`))
	roots := importer.Nest([]*importer.Transcript{tr, parent})
	require.Equal(t, []*importer.Transcript{parent}, roots)
	require.Equal(t, "call-9", tr.Link.ToolCallID)
	cfg := tr.Config("child", importtest.Env)
	require.Equal(t, session.KindSubagent, cfg.Kind)
	require.Equal(t, session.SessionRelationship{Role: "worker", ToolCallID: "call-9"}, cfg.Relationship)
}

// FuzzParse feeds arbitrary lines: the converter never panics, counts every
// line once, and produces a transcript whose revisions are valid sessions.
func FuzzParse(f *testing.F) {
	if dir := importtest.Lookup(transcripts); dir != "" {
		importtest.Seeds(f, filepath.Join(dir, "codex"), "*.jsonl")
	}
	f.Add([]byte(`{"type":"message","role":"assistant","id":"x","content":[{"type":"output_text","text":"a"}]}` + "\n" +
		`{"type":"message","role":"assistant","id":"x","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBO"}]}`))
	f.Add([]byte(`{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"cached_input_tokens":9}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := codex.Parse(bytes.NewReader(data), codex.Options{MaxLineBytes: 1 << 16})
		require.NoError(t, err)
		require.True(t, tr.Report.Balanced(), "%+v", tr.Report)
		require.Equal(t, int64(len(data)), tr.Report.Bytes)
		lines := int64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		require.Equal(t, lines, tr.Report.Lines)
		importtest.Build(t, tr)
	})
}
