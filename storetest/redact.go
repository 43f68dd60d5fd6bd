package storetest

import (
	"encoding/json"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Redaction: every adapter replaces the secrets of what it writes before
// writing it (package redact), by default with the high-confidence
// rules, and a writer's AcquireOptions may say otherwise.

// Fake secrets in valid formats (not keys of anyone's).
const (
	fakeGitHub    = "ghp_" + "Zq3Xv8Lm2Pw5Rt9Ny4Bk7Hd1Fs6Gj0Ca3UeQ"
	fakeAWS       = "AKIA" + "QW3ER5TY7UI2OP4A"
	fakeAnthropic = "sk-ant-api03-" + "r4Nd0mLo0k1ngK3yM4t3r14lF0rT3st1ngOnlyN0tR34lAtAllXyZ0123456789abcdefghijklmnopqrstuvwxyzAB-_cdAA"
)

// secretSession returns a session whose title, messages, tool input,
// tool output (large enough to be kept out of line) and error hold the
// fake secrets.
func secretSession(f *fixture, id string) (*session.Session, sessnap.Snapshot) {
	f.t.Helper()
	s := sessiontest.New(id)
	require.NoError(f.t, s.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{
		{Type: session.PartText, Text: "deploy with " + fakeAWS + " please"},
	}}))
	input, err := json.Marshal(map[string]string{"cmd": "curl -H 'Authorization: token " + fakeGitHub + "' https://api.github.com/user"})
	require.NoError(f.t, err)
	require.NoError(f.t, s.AppendMessage(session.Message{Role: session.RoleAssistant, Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: "c1", Name: "bash", Input: input},
	}}))
	require.NoError(f.t, s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "c1", Output: strings.Repeat("env: ANTHROPIC_API_KEY="+fakeAnthropic+"\n", 200)},
	}}))
	snap := sessiontest.Snap(f.t, s)
	snap.Title = "use " + fakeGitHub
	return s, snap
}

// requireNoSecret fails when v (any value, marshalled) holds a fake secret.
func requireNoSecret(f *fixture, what string, v any) {
	f.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(f.t, err)
	for _, secret := range []string{fakeGitHub, fakeAWS, fakeAnthropic, fakeGitHub[4:20], fakeAnthropic[13:40]} {
		require.NotContains(f.t, string(b), secret, "%s holds a secret", what)
	}
}

// checkRedactsBeforeWriting: what Create and Append stored, what History,
// List and Search give back, and a fork of it hold placeholders where the
// secrets were, and the rest as written.
func checkRedactsBeforeWriting(f *fixture) {
	t := f.t
	s, snap := secretSession(f, "secrets")
	first := snap
	first.Messages = snap.Messages[:1]
	w := f.createSnap(first)
	f.append(w, 1, snap)
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleAssistant, Error: "401 for " + fakeAWS, Parts: []session.Part{{Type: session.PartText, Text: "failed"}}}))
	f.append(w, 2, sessiontest.Snap(t, s))

	rec := f.load("secrets")
	requireNoSecret(f, "the latest revision", rec.Snapshot)
	msgs := rec.Snapshot.Messages
	require.Equal(t, "deploy with "+redact.Placeholder("aws-access-key-id", fakeAWS)+" please", msgs[0].Parts[0].Text)
	require.Contains(t, string(msgs[1].Parts[0].Input), redact.Placeholder("github-token", fakeGitHub))
	require.True(t, json.Valid(msgs[1].Parts[0].Input))
	require.Equal(t, strings.Repeat("env: ANTHROPIC_API_KEY="+redact.Placeholder("anthropic-api-key", fakeAnthropic)+"\n", 200), msgs[2].Parts[0].Output)
	require.Equal(t, "401 for "+redact.Placeholder("aws-access-key-id", fakeAWS), msgs[3].Error)
	for _, r := range f.history("secrets") {
		requireNoSecret(f, "a revision", r.Snapshot)
	}
	requireNoSecret(f, "the listing", f.listAll(summary.Query{}))
	res, err := f.s.Search(f.ctx, sessionstore.SearchQuery{Text: fakeAWS})
	if err == nil {
		require.Empty(t, res.Hits, "a search for the secret finds it")
	}
	res, err = f.s.Search(f.ctx, sessionstore.SearchQuery{Text: "deploy"})
	if err == nil {
		requireNoSecret(f, "search hits", res)
	}
	fw := f.fork("secrets", 0, "secrets-fork")
	requireNoSecret(f, "the fork", f.load(fw.ID()).Snapshot)
}

// checkRedactPerCall: a writer whose AcquireOptions turn redaction off
// stores what it is given, and one that adds the generic rules redacts
// more, each in its own session of the same store.
func checkRedactPerCall(f *fixture) {
	t := f.t
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(t, err)
	_, snap := secretSession(f, "verbatim")
	w, err := f.s.Create(f.ctx, snap, sessionstore.AcquireOptions{Redactor: off})
	require.NoError(t, err)
	f.track(w)
	require.Equal(t, snap.Messages[0].Parts[0].Text, f.load("verbatim").Snapshot.Messages[0].Parts[0].Text)

	generic, err := redact.New(redact.Options{Generic: true})
	require.NoError(t, err)
	s := sessiontest.New("generic")
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{
		{Type: session.PartText, Text: `password = "Tr0ub4dor&3x-horse"`},
	}}))
	require.NoError(t, f.create("generic").Release(f.ctx))
	w2, err := f.s.Acquire(f.ctx, "generic", sessionstore.AcquireOptions{Redactor: generic})
	require.NoError(t, err)
	f.track(w2)
	f.append(w2, 1, sessiontest.Snap(t, s))
	require.Equal(t, `password = "`+redact.Placeholder("generic-password", "Tr0ub4dor&3x-horse")+`"`, f.load("generic").Snapshot.Messages[0].Parts[0].Text)
}
