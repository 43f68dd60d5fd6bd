package redact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

const (
	ghToken = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
	awsKey  = "AKIA" + "Z7Q2R5T3W6Y4U2I7"
)

func TestString(t *testing.T) {
	tests := []struct {
		name    string
		opts    redact.Options
		in      string
		want    string
		wantErr error
	}{
		{name: "none", in: "hello world", want: "hello world"},
		{name: "github", in: "token " + ghToken + " here", want: "token " + redact.Placeholder("github-token", ghToken) + " here"},
		{name: "twice, one hash", in: awsKey + " and " + awsKey,
			want: redact.Placeholder("aws-access-key-id", awsKey) + " and " + redact.Placeholder("aws-access-key-id", awsKey)},
		{name: "url keeps user and host", in: "postgres://admin:hunter2secret@db:5432/x", //nolint:gosec // G101: a fake password, the test's input
			want: "postgres://admin:" + redact.Placeholder("url-password", "hunter2secret") + "@db:5432/x"},
		{name: "longer than the format", in: ghToken + "ZZ", want: ghToken + "ZZ"},
		{name: "off", opts: redact.Options{Off: true}, in: ghToken, want: ghToken},
		{name: "disabled rule", opts: redact.Options{Disable: []string{"github-token"}}, in: ghToken, want: ghToken},
		{name: "generic off by default", in: `password = "Tr0ub4dor&3x"`, want: `password = "Tr0ub4dor&3x"`},
		{name: "generic", opts: redact.Options{Generic: true}, in: `password = "Tr0ub4dor&3x"`,
			want: `password = "` + redact.Placeholder("generic-password", "Tr0ub4dor&3x") + `"`},
		{name: "unknown rule", opts: redact.Options{Disable: []string{"nope"}}, wantErr: redact.ErrUnknownRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := redact.New(tt.opts)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			got, _ := r.String(tt.in)
			require.Equal(t, tt.want, got)
			again, n := r.String(got)
			require.Equal(t, got, again, "redaction is idempotent")
			require.Zero(t, n)
		})
	}
}

func TestPlaceholderFormat(t *testing.T) {
	p := redact.Placeholder("github-token", ghToken)
	require.Regexp(t, `^\[REDACTED:github-token:[0-9a-f]{8}\]$`, p)
	require.NotContains(t, p, ghToken[4:12])
}

// TestJSONStaysValid: a secret whose match would cut an escape sequence
// (a PEM key inside a JSON string) leaves a valid document.
func TestJSONStaysValid(t *testing.T) {
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n", 3) + "-----END RSA PRIVATE KEY-----"
	in, err := json.Marshal(map[string]any{"cmd": "cat id_rsa", "out": key, "token": ghToken})
	require.NoError(t, err)
	out, n := redact.Default().JSON(in)
	require.Equal(t, 2, n)
	require.True(t, json.Valid(out), "%s", out)
	require.NotContains(t, string(out), "MIIEpAIB")
	require.NotContains(t, string(out), ghToken)
}

// TestSnapshot: a snapshot with no secret keeps the caller's messages;
// one with a secret gets a copy, and the caller's stay as they were.
func TestSnapshot(t *testing.T) {
	r := redact.Default()
	clean := sessnap.Snapshot{ID: "s", Title: "fix the build", Messages: sessnap.Messages{{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartText, Text: "hi"}}}}}
	got, n := r.Snapshot(clean)
	require.Zero(t, n)
	require.Same(t, &clean.Messages[0], &got.Messages[0])

	dirty := clean
	dirty.Title = "use my key " + ghToken[:20] + "…"
	dirty.Messages = sessnap.Messages{clean.Messages[0], {Role: session.RoleUser, Parts: []session.Part{
		{Type: session.PartText, Text: "key " + ghToken},
		{Type: session.PartToolCall, ToolCallID: "c", Name: "sh", Input: json.RawMessage(`{"env":"` + awsKey + `"}`)},
	}}}
	got, n = r.Snapshot(dirty)
	require.Equal(t, 3, n)
	require.Same(t, &dirty.Messages[0].Parts[0], &got.Messages[0].Parts[0], "a clean message is shared")
	require.NotContains(t, got.Title, ghToken[:20])
	require.Contains(t, got.Messages[1].Parts[0].Text, redact.Placeholder("github-token", ghToken))
	require.Contains(t, dirty.Messages[1].Parts[0].Text, ghToken, "the caller's message is not changed")
}

// TestStream: a growing session is scanned once per message, and the
// redacted snapshots share their first messages' memory from one append
// to the next, as the appender needs to recognise them at no cost.
func TestStream(t *testing.T) {
	st := redact.NewStream(redact.Default())
	texts := []string{"hello", "my token is " + ghToken, "ok", "and " + awsKey, "done"}
	total := 0
	// The caller's growing conversation, in one backing array.
	conv := make(sessnap.Messages, 0, 8)
	var outs []sessnap.Messages
	for _, x := range texts {
		conv = append(conv, session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartText, Text: x}}})
		snap := sessnap.Snapshot{ID: "s", Messages: conv}
		total += st.Snapshot(&snap)
		outs = append(outs, snap.Messages)
	}
	require.Equal(t, 2, total, "each secret counted once: only new messages are scanned")
	require.Same(t, &conv[0], &outs[0][0], "no secret yet: the caller's own messages")
	for i := 2; i < len(outs); i++ {
		require.Same(t, &outs[i-1][0], &outs[i][0], "revision %d continues the redacted copy", i)
	}
	last := outs[len(outs)-1]
	require.Contains(t, last[1].Parts[0].Text, "[REDACTED:github-token:")
	require.Contains(t, last[3].Parts[0].Text, "[REDACTED:aws-access-key-id:")
	require.Equal(t, "done", last[4].Parts[0].Text)
	require.Contains(t, conv[1].Parts[0].Text, ghToken, "the caller's messages are never written to")
}
