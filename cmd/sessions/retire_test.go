package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// TestRetireCLI drives retire, ls --retired, search --retired, restore
// and rm --retired through the binary: a held session is left live (exit
// 1, named on stderr), a retired one leaves ls and search and is found by
// their --retired forms, a restore brings it back and verify is clean,
// and rm --retired is the way one is deleted.
func TestRetireCLI(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	for _, id := range []string{"alpha", "beta", "held"} {
		s := sessiontest.New(id)
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "the quokka of "+id, sessiontest.Epoch.Add(time.Second))))
		writeSession(t, st, s, 1)
	}
	w, err := st.Acquire(ctx, "held", sessionstore.AcquireOptions{Label: "agent"})
	require.NoError(t, err)
	defer w.Release(ctx)
	dir := []string{"--dir", root}
	run := func(args ...string) result { return sessions(t, nil, append(dir, args...)...) }

	r := run("retire")
	require.Equal(t, exitUsage, r.Code, r.String())
	require.Contains(t, r.Stderr, "say which sessions")
	r = run("retire", "--older-than", "soon")
	require.Equal(t, exitUsage, r.Code, r.String())
	r = run("retire", "--policy", "--older-than", "9d")
	require.Equal(t, exitUsage, r.Code, r.String())
	r = run("retire", "--policy")
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "no policy")

	r = run("retire", "--dry-run", "alpha")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "would retire alpha")
	r = run("retire", "alpha", "held")
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stdout, "retired alpha")
	require.Contains(t, r.Stderr, "left held live: held by a live holder")

	r = run("ls")
	require.NotContains(t, r.Stdout, "alpha")
	require.Contains(t, r.Stdout, "beta")
	r = run("ls", "--retired")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "alpha  retired ")
	require.NotContains(t, r.Stdout, "beta")
	r = run("search", "quokka", "alpha")
	require.Contains(t, r.Stderr, "no matches")
	r = run("search", "--retired", "quokka", "alpha")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "alpha  rev ")
	r = run("verify", "--retired")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Equal(t, "every retired session checks out\n", r.Stdout)
	pack := filepath.Join(root, ".retired", "alpha.tar.zst")
	good, err := os.ReadFile(pack)
	require.NoError(t, err)
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 1
	require.NoError(t, os.WriteFile(pack, bad, 0o600))
	r = run("verify", "--retired")
	require.Equal(t, exitCorrupt, r.Code, r.String())
	require.Contains(t, r.Stdout, "alpha: jsonlstore: retired area damaged")
	r = run("restore", "alpha")
	require.Equal(t, exitFail, r.Code, r.String())
	require.NoError(t, os.WriteFile(pack, good, 0o600))

	r = run("restore", "alpha")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "restored alpha")
	r = run("restore", "alpha")
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "ls --retired")
	require.NoError(t, w.Release(ctx))
	r = run("verify")
	require.Equal(t, exitOK, r.Code, r.String())

	r = run("retire", "alpha", "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, `"reason": "named"`)
	r = run("rm", "--retired", "alpha")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Equal(t, "removed retired alpha\n", r.Stdout)
	r = run("ls", "--retired")
	require.Equal(t, "no retired sessions\n", r.Stdout)
}
