package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// Papercuts a first hour with the command met (each its test).

// TestErrorsWithoutPackagePrefix: what a user reads names the command,
// not the library package an error came from.
func TestErrorsWithoutPackagePrefix(t *testing.T) {
	root := statesStore(t)
	for _, args := range [][]string{{"show", "NOPE"}, {"lease", "NOPE"}, {"ls", "--state", "bogus"}, {"ls", "--kind", "robot"}} {
		r := sessions(t, nil, append([]string{"--dir", root}, args...)...)
		require.NotEqual(t, exitOK, r.Code, "%v", args)
		require.True(t, strings.HasPrefix(r.Stderr, "sessions "+args[0]+": "), "%v: %s", args, r.Stderr)
		for _, p := range packagePrefixes {
			require.NotContains(t, r.Stderr, p, "%v", args)
		}
	}
	r := sessions(t, nil, "--dir", root, "show", "NOPE")
	require.Contains(t, r.Stderr, "sessions show: not found: session NOPE")
}

// TestUnknownStateListsStates: an unknown state or kind in a filter is
// refused with the valid ones named.
func TestUnknownStateListsStates(t *testing.T) {
	root := statesStore(t)
	r := sessions(t, nil, "--dir", root, "ls", "--state", "bogus")
	require.Equal(t, exitUsage, r.Code)
	require.Contains(t, r.Stderr, `unknown state "bogus" (the states: idle, running, awaiting, completed, stopped, cancelled, failed)`)
	r = sessions(t, nil, "--dir", root, "ls", "--kind", "robot")
	require.Equal(t, exitUsage, r.Code)
	require.Contains(t, r.Stderr, `unknown kind "robot" (the kinds: primary, subagent, scheduled, debug, unknown)`)
}

// TestImportedIDsFitEightyColumns: ls and watch of sessions with the long
// IDs of imports fit an 80-column terminal, each ID shown whole or as a
// prefix of it.
func TestImportedIDsFitEightyColumns(t *testing.T) {
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	ids := []string{
		"claude-code-0d3a8e6f-5b1c-4e2a-9f7d-3c2b1a0e9d8c-agent-a881341",
		"claude-code-0d3a8e6f-5b1c-4e2a-9f7d-3c2b1a0e9d8c",
		"codex-019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b",
	}
	for _, id := range ids {
		s := sessiontest.New(id)
		require.NoError(t, s.SetTitle("Fix the flaky TestParseDuration on CI", session.TitleFirstPrompt))
		writeSession(t, st, s, 1)
	}
	require.NoError(t, st.Close())
	for _, tc := range []struct{ stopAfter, cmd string }{{"", "ls"}, {"2", "watch"}} {
		shown := ansi.ReplaceAllString(onTerminal(t, nil, tc.stopAfter, "--dir", root, tc.cmd), "")
		var rows int
		for _, l := range strings.Split(shown, "\n") {
			require.LessOrEqual(t, cli.Width(l), 80, "%s: a line wider than the terminal: %q", tc.cmd, l)
			for _, id := range ids {
				if strings.HasPrefix(l, id[:idMin-1]) {
					rows++
					break
				}
			}
		}
		require.GreaterOrEqual(t, rows, len(ids), "%s: every session has its row: %s", tc.cmd, shown)
	}
}

// TestLsJSONLabelsAreObjects: ls --json gives every session's labels as
// an object, {} when it has none, whether the session was made by the
// handle, by sessions new, by an import or by a fork, with or without
// labels.
func TestLsJSONLabelsAreObjects(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "store")
	r := sessions(t, nil, "--dir", root, "new", "--id", "by-new")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	r = sessions(t, nil, "--dir", root, "new", "--id", "by-new-labelled", "--label", "team=core")
	require.Equal(t, exitOK, r.Code, r.Stderr)

	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	h, err := sessionstore.Open(ctx, st, "by-handle", sessionstore.HandleOptions{})
	require.NoError(t, err)
	_, err = h.Add(ctx, session.TextMessage(session.RoleUser, "hello", time.Time{}), session.TextMessage(session.RoleAssistant, "hi", time.Time{}))
	require.NoError(t, err)
	require.NoError(t, h.Close(ctx))
	require.NoError(t, st.Close())

	r = sessions(t, nil, "--dir", root, "fork", "by-handle", "--at-message", "1", "--id", "by-fork")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	dir, _ := importtest.Corpus(t, "../..")
	r = sessions(t, nil, "--dir", root, "import", "claude-code", filepath.Join(dir, "claude-code"))
	require.Equal(t, exitOK, r.Code, r.Stderr)

	r = sessions(t, nil, "--dir", root, "ls", "--json", "--all")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.NotContains(t, r.Stdout, "null")
	var page struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &page))
	seen := map[string]bool{}
	for _, it := range page.Items {
		var id string
		require.NoError(t, json.Unmarshal(it["id"], &id))
		seen[id] = true
		var labels map[string]string
		raw, ok := it["labels"]
		require.True(t, ok, "%s: no labels key", id)
		require.NoError(t, json.Unmarshal(raw, &labels))
		require.NotNil(t, labels, "%s: labels %s", id, raw)
		if id == "by-new-labelled" {
			require.Equal(t, map[string]string{"team": "core"}, labels)
		}
	}
	for _, id := range []string{"by-new", "by-new-labelled", "by-handle", "by-fork"} {
		require.True(t, seen[id], "%s listed", id)
	}
	require.Greater(t, len(seen), 4, "the imported sessions are listed")
}
