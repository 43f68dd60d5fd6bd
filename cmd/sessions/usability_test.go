package main

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

// ulidStore holds sessions named like minted IDs, two of them sharing a
// long prefix.
func ulidStore(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	for _, id := range []string{"01KB3C0ZJ6AAAA", "01KB3C0ZJ6AAAB", "01KB3C1XYZ"} {
		writeSession(t, st, sessiontest.New(id), 1)
	}
	return root
}

// TestSessionNames: a session is named by its ID or a unique prefix of
// it, in either case; an ambiguous prefix lists the candidates.
func TestSessionNames(t *testing.T) {
	root := ulidStore(t)
	for _, args := range [][]string{{"show", "01kb3c1xyz"}, {"log", "01KB3C1"}, {"lease", "01kb3c1"}, {"export", "01kb3c1x", "--latest"}, {"verify", "01kb3c1"}, {"du", "01KB3C1"}} {
		r := inProcess(t, append([]string{"--dir", root}, args...)...)
		require.Equal(t, exitOK, r.Code, "%v: %s", args, r.String())
	}
	r := inProcess(t, "--dir", root, "verify", "01kb3c1")
	require.Contains(t, r.Stdout, "01KB3C1XYZ: ok")
	require.Contains(t, r.Stdout, "1 session verified: all sound")

	r = inProcess(t, "--dir", root, "lease", "01kb3c0")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, `session ID "01kb3c0" is ambiguous: 2 sessions start with it: 01KB3C0ZJ6AAAA, 01KB3C0ZJ6AAAB`)
	r = inProcess(t, "--dir", root, "rm", "02")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "not found")
	r = inProcess(t, "--dir", root, "rm", "01kb3c1xyz")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Equal(t, "removed 01KB3C1XYZ\n", r.Stdout)
}

// TestShowRevZero: revisions count from 1; --rev 0 is a usage error, not
// the latest in disguise.
func TestShowRevZero(t *testing.T) {
	root := ulidStore(t)
	r := inProcess(t, "--dir", root, "show", "01KB3C1XYZ", "--rev", "0")
	require.Equal(t, exitUsage, r.Code)
	require.Contains(t, r.Stderr, "--rev 0: revisions count from 1 (leave --rev out for the latest)")
	require.Empty(t, r.Stdout)
	require.Equal(t, exitOK, inProcess(t, "--dir", root, "show", "01KB3C1XYZ", "--rev", "1").Code)
}

// snakeKeys reports the JSON object keys in v that are not snake_case.
func snakeKeys(v any) []string {
	var bad []string
	ok := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !ok.MatchString(k) {
				bad = append(bad, k)
			}
			bad = append(bad, snakeKeys(e)...)
		}
	case []any:
		for _, e := range x {
			bad = append(bad, snakeKeys(e)...)
		}
	}
	return bad
}

// TestRepairJSONKeys: every key of repair --json is snake_case, the
// recovery's included.
func TestRepairJSONKeys(t *testing.T) {
	root := fixtureStore(t, "partial-last-line")
	r := inProcess(t, "--dir", root, "repair", "partial-last-line", "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &v))
	require.Empty(t, snakeKeys(v), r.Stdout)
	rec := v["recovery"].(map[string]any)
	require.Positive(t, rec["tail_bytes"], r.Stdout)
	require.Contains(t, rec, "tail_offset")
	require.Contains(t, rec, "generation")
}

// TestSessionsCompact: `sessions compact` is the compact command: the
// same flags, checks and report.
func TestSessionsCompact(t *testing.T) {
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{FullRecordsOnly: true})
	require.NoError(t, err)
	writeSession(t, st, sessiontest.New("alpha"), 9)
	writeSession(t, st, sessiontest.New("beta"), 0)
	require.NoError(t, st.Close())

	a := sessions(t, nil, "--dir", root, "compact", "--keep-last", "2", "--dry-run")
	b := compactCmd(t, nil, "--dir", root, "--keep-last", "2", "--dry-run")
	require.Equal(t, exitOK, a.Code, a.String())
	require.Equal(t, b.String(), a.String(), "the same report")
	require.Contains(t, a.Stdout, "2 sessions: 1 would compact, 1 skipped, 0 failed; 8 revisions trimmed")

	r := sessions(t, nil, "--dir", root, "compact", "alp", "--keep-last", "1")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "1 session: 1 compacted")
	r = sessions(t, nil, "--dir", root, "compact")
	require.Equal(t, exitUsage, r.Code)
	require.Contains(t, r.Stderr, "say what to keep")
	r = sessions(t, nil, "help", "compact")
	require.Contains(t, r.Stdout, "--keep-since D")
	r = sessions(t, nil, "help")
	require.Contains(t, r.Stdout, "\n  compact  ")
	require.Contains(t, r.Stdout, "Exit status: 0 done")
	require.Contains(t, r.Stdout, "3 verify, repair, backup: done, and corruption was found")
}
