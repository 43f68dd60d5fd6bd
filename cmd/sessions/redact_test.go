package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/redact"
)

// TestRedactCommand: scan finds the secret a session was written with;
// redact rewrites it, says what it did and what it could not reach, and
// never prints the secret; scan then finds nothing and verify exits 0; a
// second redact rewrites nothing; an unknown session exits 1.
func TestRedactCommand(t *testing.T) {
	root := t.TempDir()
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(t, err)
	writeLeaky(t, root, "leaky", off)
	require.Equal(t, 5, inProcess(t, "--dir", root, "scan", "leaky").Code)

	r := inProcess(t, "--dir", root, "redact", "leaky")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "leaky: 1 of 1 revisions rewritten; secrets replaced: aws-access-key-id 1")
	require.Contains(t, r.Stdout, "purged leaky/log.jsonl")
	require.Contains(t, r.Stdout, "rewrote the listing catalog")
	require.Contains(t, r.Stdout, "not reached: copies made outside the store")
	require.NotContains(t, r.Stdout, scanCmdKey)

	r = inProcess(t, "--dir", root, "scan", "leaky")
	require.Equal(t, exitOK, r.Code, r.Stdout)
	r = inProcess(t, "--dir", root, "verify")
	require.Equal(t, exitOK, r.Code, r.Stdout+r.Stderr)

	r = inProcess(t, "--dir", root, "redact", "leaky", "--json")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, `"rewritten": 0`)
	require.Equal(t, exitFail, inProcess(t, "--dir", root, "redact", "nope").Code)
	require.Equal(t, exitUsage, inProcess(t, "--dir", root, "redact").Code)
}
