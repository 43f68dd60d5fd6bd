package claudecode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer/claudecode"
)

// TestDiscoverAndFoldResumed lays out a projects directory: a session, the
// session that resumed it (its first lines copies of the first's, under a
// new sessionId), a 2.0 sub-agent file beside them, and one of another
// project. Discover lists the sessions; LoadProject folds the resumed one
// into its continuation and attaches the sub-agent.
func TestDiscoverAndFoldResumed(t *testing.T) {
	line := func(typ, uuid, session, content string) string {
		if typ == "assistant" {
			return `{"type":"assistant","uuid":"` + uuid + `","sessionId":"` + session + `","timestamp":"2026-01-02T03:04:05Z","message":{"id":"msg_` + uuid + `","model":"claude","content":[{"type":"text","text":"` + content + `"}]}}` + "\n"
		}
		return `{"type":"user","uuid":"` + uuid + `","sessionId":"` + session + `","timestamp":"2026-01-02T03:04:05Z","cwd":"/src/app","message":{"role":"user","content":"` + content + `"}}` + "\n"
	}
	first := line("user", "u1", "s1", "hello") + line("assistant", "a1", "s1", "hi")
	resumed := line("user", "u1", "s2", "hello") + line("assistant", "a1", "s2", "hi") +
		line("user", "u2", "s2", "again") + `{"type":"user","uuid":"r1","sessionId":"s2","timestamp":"2026-01-02T03:04:06Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]},"toolUseResult":{"agentId":"ab12"}}` + "\n"
	agent := strings.ReplaceAll(line("user", "x1", "s2", "sub task"), `"type":"user",`, `"type":"user","isSidechain":true,"agentId":"ab12",`)
	fsys := fstest.MapFS{
		"-src-app/s1.jsonl":         {Data: []byte(first)},
		"-src-app/s2.jsonl":         {Data: []byte(resumed)},
		"-src-app/agent-ab12.jsonl": {Data: []byte(agent)},
		"-src-lib/s3.jsonl":         {Data: []byte(line("user", "z1", "s3", "lib"))},
	}
	names, err := claudecode.Discover(fsys)
	require.NoError(t, err)
	require.Equal(t, []string{"-src-app/s1.jsonl", "-src-app/s2.jsonl", "-src-lib/s3.jsonl"}, names)

	ts, err := claudecode.LoadProject(fsys, "-src-app", claudecode.Options{})
	require.NoError(t, err)
	require.Len(t, ts, 1, "the resumed session is folded into its continuation")
	require.Equal(t, "s2", ts[0].SourceID)
	require.Equal(t, "s1", ts[0].Labels[claudecode.ResumesLabel])
	require.Len(t, ts[0].Messages, 4)
	require.Len(t, ts[0].Children, 1)
	require.Equal(t, "ab12", ts[0].Children[0].AgentID)
	require.Equal(t, "t1", ts[0].Children[0].Link.ToolCallID)
	require.Equal(t, "-src-app/agent-ab12.jsonl", ts[0].Children[0].Path)

	// What an import that skips unchanged files checks: each session's
	// sub-agent files and its session ID, without parsing it.
	files, err := claudecode.SubagentFiles(fsys, "-src-app/s2.jsonl", "s2")
	require.NoError(t, err)
	require.Equal(t, []string{"-src-app/agent-ab12.jsonl"}, files)
	files, err = claudecode.SubagentFiles(fsys, "-src-app/s1.jsonl", "s1")
	require.NoError(t, err)
	require.Empty(t, files, "the sibling agent file carries another session's ID")
	id, first, err := claudecode.Peek(fsys, "-src-app/s2.jsonl")
	require.NoError(t, err)
	require.Equal(t, "s2", id)
	require.Equal(t, "u1", first, "a resumed session shares its first message with the one it resumed")
	fsys["-src-app/untitled.jsonl"] = &fstest.MapFile{Data: []byte(`{"type":"summary","summary":"x","leafUuid":"u"}` + "\n")}
	id, first, err = claudecode.Peek(fsys, "-src-app/untitled.jsonl")
	require.NoError(t, err)
	require.Equal(t, "untitled", id, "a file whose lines name no session is named by its file")
	require.Empty(t, first)
}

// TestLoadReadsMeta: a 2.1 sub-agent's .meta.json names its role when the
// parent does not.
func TestLoadReadsMeta(t *testing.T) {
	dir := t.TempDir()
	main := `{"type":"user","uuid":"u1","sessionId":"s9","timestamp":"2026-01-02T03:04:05Z","message":{"role":"user","content":"go"}}` + "\n"
	sub := `{"type":"user","uuid":"x1","isSidechain":true,"agentId":"cd34","sessionId":"s9","timestamp":"2026-01-02T03:04:06Z","message":{"role":"user","content":"look"}}` + "\n"
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "s9", "subagents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s9.jsonl"), []byte(main), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s9", "subagents", "agent-cd34.jsonl"), []byte(sub), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s9", "subagents", "agent-cd34.meta.json"), []byte(`{"agentType":"Explore","description":"look around"}`), 0o644))
	tr, err := claudecode.Load(os.DirFS(dir), "s9.jsonl", claudecode.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Children, 1)
	require.Equal(t, "Explore", tr.Children[0].Link.Role)
	files, err := claudecode.SubagentFiles(os.DirFS(dir), "s9.jsonl", "s9")
	require.NoError(t, err)
	require.Equal(t, []string{"s9/subagents/agent-cd34.jsonl"}, files)
}
