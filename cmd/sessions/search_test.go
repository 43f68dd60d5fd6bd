package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// searchStore makes a store with three sessions: one whose prompt holds
// control characters, one with a label and a tool result, one in
// another project.
func searchStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	require.NoError(t, err)
	mk := func(id, title, prompt string, edit func(*session.Config), more ...session.Message) {
		cfg := sessiontest.Config(id)
		if edit != nil {
			edit(&cfg)
		}
		s, err := session.New(cfg)
		require.NoError(t, err)
		require.NoError(t, s.SetTitle(title, session.TitleExplicit))
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, prompt, sessiontest.Epoch)))
		for _, m := range more {
			require.NoError(t, s.AppendMessage(m))
		}
		writeSession(t, st, s, 0)
	}
	mk("s-evil", "Evil \x1b]0;pwned\x07 title", "the flaky test \x1b[31mred\x1b[0m and a bell\x07", nil)
	mk("s-tool", "Tools", "run the flaky test", func(c *session.Config) {
		c.Labels = map[string]string{"team": "infra"}
		c.Workspace = session.Workspace{Project: "/src/app", Dir: "/src/app"}
	}, session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c1", Output: "FAIL flaky_test.go"}}})
	mk("s-other", "Other", "unrelated words", func(c *session.Config) {
		c.Workspace = session.Workspace{Project: "/src/lib", Dir: "/src/lib"}
	})
	require.NoError(t, st.Close())
	return dir
}

func TestSearchCommand(t *testing.T) {
	dir := searchStore(t)
	r := sessions(t, nil, "--dir", dir, "search", `"flaky test"`)
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.NotContains(t, r.Stdout, "\x1b", "the sessions' control characters are escaped")
	require.NotContains(t, r.Stdout, "\x07")
	require.Contains(t, r.Stdout, `the «flaky test» \x1b[31mred\x1b[0m and a bell\x07`)
	require.Contains(t, r.Stdout, `Evil \x1b]0;pwned\x07 title`)
	require.Contains(t, r.Stdout, "s-tool  rev 1  message 1 (tool) in tools")
	require.Equal(t, 3, strings.Count(r.Stdout, "\n    "), "three hits: %s", r.Stdout)

	r = sessions(t, nil, "--dir", dir, "search", "flaky", "--no-tools", "--json")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	var res sessionstore.SearchResult
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res))
	require.Len(t, res.Hits, 2)
	for _, h := range res.Hits {
		require.Equal(t, "text", h.Field)
		require.Equal(t, "flaky", h.Snippet[h.Marks[0].Start:h.Marks[0].End])
	}
	require.NotContains(t, r.Stdout, "\x1b", "JSON escapes control characters too")

	r = sessions(t, nil, "--dir", dir, "search", "flaky", "--label", "team=infra", "--project", "/src/app")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, 2, strings.Count(r.Stdout, "s-tool  rev"), r.Stdout)
	require.NotContains(t, r.Stdout, "s-evil")

	r = sessions(t, nil, "--dir", dir, "search", "nowhere")
	require.Equal(t, exitOK, r.Code)
	require.Equal(t, "no matches\n", r.Stderr)

	for _, args := range [][]string{{"search"}, {"search", `""`}, {"search", "x", "--limit", "0"}, {"search", "x", "--label", "novalue"}} {
		r := sessions(t, nil, append([]string{"--dir", dir}, args...)...)
		require.Equal(t, exitUsage, r.Code, "%v: %s", args, r.Stderr)
	}
	r = sessions(t, nil, "--dir", filepath.Join(dir, "missing"), "search", "x")
	require.Equal(t, exitFail, r.Code)
}

// TestSearchIndexDeletedByHand: with the index deleted, search answers
// the same (indexing first, which --json reports), and reindex rebuilds
// it.
func TestSearchIndexDeletedByHand(t *testing.T) {
	dir := searchStore(t)
	before := sessions(t, nil, "--dir", dir, "search", "flaky")
	require.Equal(t, exitOK, before.Code, before.Stderr)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, jsonlstore.SearchDir)))
	r := sessions(t, nil, "--dir", dir, "search", "flaky", "--json")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	var res sessionstore.SearchResult
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res))
	require.Equal(t, 3, res.Indexed)
	require.Equal(t, before.Stdout, sessions(t, nil, "--dir", dir, "search", "flaky").Stdout)

	r = sessions(t, nil, "--dir", dir, "reindex")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "catalog: 3 sessions\nsearch index: 3 sessions indexed\n", r.Stdout, "reindex rebuilds both indexes")
	require.Equal(t, before.Stdout, sessions(t, nil, "--dir", dir, "search", "flaky").Stdout)
}

// TestSearchIndexDamagedCLI: with twenty pages of the index overwritten,
// verify reports the index damaged (exit 3, the sessions sound), search
// answers as before (replacing the index), after which verify is clean;
// damaged again, reindex rebuilds it.
func TestSearchIndexDamagedCLI(t *testing.T) {
	dir := searchStore(t)
	before := sessions(t, nil, "--dir", dir, "search", "flaky")
	require.Equal(t, exitOK, before.Code, before.Stderr)
	r := sessions(t, nil, "--dir", dir, "verify")
	require.Equal(t, exitOK, r.Code, r.Stdout+r.Stderr)
	require.Contains(t, r.Stdout, "search index: sound (3 sessions)")

	damage := func() {
		p := filepath.Join(dir, jsonlstore.SearchDir, "index.db")
		fi, err := os.Stat(p)
		require.NoError(t, err)
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		require.NoError(t, err)
		junk := bytes.Repeat([]byte{0xA5}, 4096)
		for page := int64(1); page < fi.Size()/4096; page++ { // all but the first
			_, err := f.WriteAt(junk, page*4096)
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}
	damage()
	r = sessions(t, nil, "--dir", dir, "verify")
	require.Equal(t, exitCorrupt, r.Code, r.Stdout+r.Stderr)
	require.Contains(t, r.Stdout, "search index: DAMAGED")
	require.Contains(t, r.Stdout, "3 sessions verified: all sound")
	r = sessions(t, nil, "--dir", dir, "search", "flaky")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, before.Stdout, r.Stdout)
	r = sessions(t, nil, "--dir", dir, "verify")
	require.Equal(t, exitOK, r.Code, r.Stdout+r.Stderr)

	damage()
	r = sessions(t, nil, "--dir", dir, "reindex")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "catalog: 3 sessions\nsearch index: 3 sessions indexed\n", r.Stdout)
	r = sessions(t, nil, "--dir", dir, "verify")
	require.Equal(t, exitOK, r.Code, r.Stdout+r.Stderr)
	require.Equal(t, before.Stdout, sessions(t, nil, "--dir", dir, "search", "flaky").Stdout)
}
