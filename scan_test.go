package sessionstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

const (
	scanGitHub = "ghp_" + "Yq3Xv8Lm2Pw5Rt9Ny4Bk7Hd1Fs6Gj0Ca3UeQ"
	scanAWS    = "AKIA" + "YW3ER5TY7UI2OP4C"
)

// TestScan: secrets written with redaction off are reported once per
// place, at the first revision that holds them, with their rule and
// hash and never their text; a session written with redaction on has
// none to report.
func TestScan(t *testing.T) {
	ctx := t.Context()
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(t, err)
	st := memstore.New(memstore.Options{})
	defer st.Close()

	s := sessiontest.New("leaky")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{Redactor: off})
	require.NoError(t, err)
	add := func(m session.Message) {
		t.Helper()
		require.NoError(t, s.AppendMessage(m))
		_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	add(session.TextMessage(session.RoleUser, "use "+scanAWS, sessiontest.Epoch))
	add(session.TextMessage(session.RoleAssistant, "ok", sessiontest.Epoch))
	add(session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c",
		Content: []session.Part{{Type: session.PartText, Text: "token=" + scanGitHub}}}}})
	require.NoError(t, w.Release(ctx))

	clean := sessiontest.New("clean")
	require.NoError(t, clean.AppendMessage(session.TextMessage(session.RoleUser, "use "+scanAWS, sessiontest.Epoch)))
	w2, err := st.Create(ctx, sessiontest.Snap(t, clean), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w2.Release(ctx))

	var got []sessionstore.SecretFinding
	for f, err := range sessionstore.Scan(ctx, st, redact.Default()) {
		require.NoError(t, err)
		got = append(got, f)
	}
	require.Len(t, got, 2)
	base := len(sessiontest.Snap(t, sessiontest.New("x")).Messages)
	require.Equal(t, sessionstore.SecretFinding{ID: "leaky", Revision: 2, Message: base, Part: "0", Field: "text", Rule: "aws-access-key-id", Hash: hashOf(scanAWS)}, got[0])
	require.Equal(t, sessionstore.SecretFinding{ID: "leaky", Revision: 4, Message: base + 2, Part: "0.0", Field: "text", Rule: "github-token", Hash: hashOf(scanGitHub)}, got[1])

	for _, err := range sessionstore.Scan(ctx, st, redact.Default(), "nope") {
		require.ErrorIs(t, err, sessionstore.ErrNotFound)
	}
}

func hashOf(secret string) string {
	p := redact.Placeholder("x", secret)
	return p[len("[REDACTED:x:") : len(p)-1]
}
