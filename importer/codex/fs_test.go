package codex_test

import (
	"os"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
)

// TestLoadAll reads a sessions directory laid out as Codex lays it out: the
// real rollout, a sub-agent's thread spawned by it, and a rollout that
// names no thread (its file name does).
func TestLoadAll(t *testing.T) {
	data, err := os.ReadFile(files(t)[0])
	require.NoError(t, err)
	parent := parse(t, data)
	child := `{"timestamp":"2026-05-11T09:00:00Z","type":"session_meta","payload":{"id":"019e0000-0000-7000-8000-000000000001","cwd":"/w","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + parent.SourceID + `","depth":1}}}}}
{"timestamp":"2026-05-11T09:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"sub task"}]}}
`
	anonymous := `{"timestamp":"2026-05-12T09:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}
`
	fsys := fstest.MapFS{
		"2026/05/11/rollout-2026-05-11T08-26-55-" + parent.SourceID + ".jsonl":              {Data: data},
		"2026/05/11/rollout-2026-05-11T09-00-00-019e0000-0000-7000-8000-000000000001.jsonl": {Data: []byte(child)},
		"2026/05/12/rollout-2026-05-12T09-00-00-019e0000-0000-7000-8000-0000000000ff.jsonl": {Data: []byte(anonymous)},
		"2026/05/12/notes.txt": {Data: []byte("not a rollout")},
	}
	names, err := codex.Discover(fsys)
	require.NoError(t, err)
	require.Len(t, names, 3)
	roots, err := codex.LoadAll(fsys, codex.Options{})
	require.NoError(t, err)
	require.Len(t, roots, 2)
	require.Equal(t, parent.SourceID, roots[0].SourceID)
	require.Len(t, roots[0].Children, 1)
	require.Equal(t, "019e0000-0000-7000-8000-000000000001", roots[0].Children[0].SourceID)
	require.Equal(t, "019e0000-0000-7000-8000-0000000000ff", roots[1].SourceID, "a rollout without meta is named by its file")
	require.Contains(t, roots[1].Path, "2026/05/12/")
	importtest.Build(t, roots[0].Children[0])
}
