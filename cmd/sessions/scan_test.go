package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// A fake key in a valid format (no one's).
const scanCmdKey = "AKIA" + "XW3ER5TY7UI2OP4D"

// writeLeaky writes session id holding scanCmdKey into the store at root,
// with redaction as red says (nil: the store's default).
func writeLeaky(t *testing.T, root, id string, red *redact.Redactor) {
	t.Helper()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	s := sessiontest.New(id)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "deploy with "+scanCmdKey, sessiontest.Epoch)))
	w, err := st.Create(t.Context(), sessiontest.Snap(t, s), sessionstore.AcquireOptions{Redactor: red})
	require.NoError(t, err)
	require.NoError(t, w.Release(t.Context()))
}

// TestScanCommand: scan exits 0 on a store whose sessions were redacted
// when written, 5 when one holds a secret, naming the session, the rule
// and the hash and never the secret, and 1 for an unknown session.
func TestScanCommand(t *testing.T) {
	root := t.TempDir()
	writeLeaky(t, root, "clean", nil)
	r := inProcess(t, "--dir", root, "scan")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "no secrets found")

	off, err := redact.New(redact.Options{Off: true})
	require.NoError(t, err)
	writeLeaky(t, root, "leaky", off)
	r = inProcess(t, "--dir", root, "scan")
	require.Equal(t, 5, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "leaky")
	require.Contains(t, r.Stdout, "aws-access-key-id")
	require.NotContains(t, r.Stdout, scanCmdKey)
	require.NotContains(t, r.Stdout, scanCmdKey[4:12])

	r = inProcess(t, "--dir", root, "scan", "clean", "--json")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	r = inProcess(t, "--dir", root, "scan", "leaky", "--json")
	require.Equal(t, 5, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, `"rule":"aws-access-key-id"`)
	require.Contains(t, r.Stdout, `"where":"log"`)

	// A retired session is scanned in its pack.
	require.Equal(t, exitOK, inProcess(t, "--dir", root, "retire", "leaky").Code)
	r = inProcess(t, "--dir", root, "scan")
	require.Equal(t, 5, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "retired")
	require.NotContains(t, r.Stdout, scanCmdKey[4:12])
	require.Equal(t, 5, inProcess(t, "--dir", root, "scan", "leaky").Code)
	require.Equal(t, exitFail, inProcess(t, "--dir", root, "scan", "nope").Code)
	require.Equal(t, exitUsage, inProcess(t, "--dir", root, "scan", "--frob").Code)
}
