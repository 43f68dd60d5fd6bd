package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// loadIn loads session id from the directory store dir.
func loadIn(t *testing.T, dir string, id session.SessionID, rev uint64) sessionstore.Record {
	t.Helper()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	rec, err := st.LoadWith(context.Background(), id, sessionstore.LoadOptions{Revision: rev})
	require.NoError(t, err)
	return rec
}

// TestRewindAndForkAtMessage: rewind by count and by message ID writes a
// revision each and keeps the older ones; fork --at-message makes an idle
// session that records its parent and point; points that name nothing
// are refused, writing nothing.
func TestRewindAndForkAtMessage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	r := inProcess(t, "--dir", dir, "new", "--id", "conv")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	r = appendIn(t, dir, `{"role":"user","parts":[{"type":"text","text":"first prompt"}]}`+"\n"+
		`{"role":"assistant","parts":[{"type":"text","text":"first answer"}]}`+"\n"+
		`{"role":"user","parts":[{"type":"text","text":"second prompt"}]}`+"\n"+
		`{"role":"assistant","parts":[{"type":"text","text":"second answer"}]}`+"\n", "conv")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	before := loadIn(t, dir, "conv", 0)
	require.Len(t, before.Snapshot.Messages, 4)
	ids := []string{}
	for _, m := range before.Snapshot.Messages {
		require.NotEmpty(t, m.ID, "append gives every message an ID")
		ids = append(ids, m.ID)
	}

	// show prints the IDs, so that a person can name a point.
	r = inProcess(t, "--dir", dir, "show", "conv", "--format", "text", "--ids")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, ids[1])

	r = inProcess(t, "--dir", dir, "fork", "conv", "--at-message", ids[1], "--id", "conv-fork")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "conv-fork\n", r.Stdout)
	fork := loadIn(t, dir, "conv-fork", 0)
	require.Len(t, fork.Snapshot.Messages, 2)
	require.Equal(t, session.StateIdle, fork.Snapshot.State)
	require.Equal(t, "first prompt", fork.Snapshot.Title)
	require.Equal(t, session.SessionRelationship{ParentID: "conv", RootID: "conv", ForkedAt: ids[1]}, fork.Snapshot.Relationship)
	r = inProcess(t, "--dir", dir, "show", "conv-fork", "--format", "text")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "fork of conv at message "+ids[1])
	require.NotContains(t, r.Stdout, "sub-agent")

	r = inProcess(t, "--dir", dir, "rewind", "conv", "--to-message", "3")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "conv revision 3: rewound to 3 messages\n", r.Stdout)
	r = inProcess(t, "--dir", dir, "rewind", "conv", "--to-message", ids[0])
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "conv revision 4: rewound to 1 message\n", r.Stdout)
	latest := loadIn(t, dir, "conv", 0)
	require.Equal(t, []session.Message{before.Snapshot.Messages[0]}, []session.Message(latest.Snapshot.Messages))
	require.Len(t, loadIn(t, dir, "conv", before.Revision).Snapshot.Messages, 4, "the older revision keeps every message")

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"rewind", "conv", "--to-message", "9"}, `message "9" in session conv`},
		{[]string{"rewind", "conv", "--to-message", "nope"}, `message "nope"`},
		{[]string{"rewind", "conv"}, "--to-message is required"},
		{[]string{"fork", "conv", "--at-message", "nope"}, `message "nope"`},
	} {
		r = inProcess(t, append([]string{"--dir", dir}, bad.args...)...)
		require.NotEqual(t, exitOK, r.Code, "%v", bad.args)
		require.Contains(t, r.Stderr, bad.want, "%v", bad.args)
	}
	require.Equal(t, latest.Revision, loadIn(t, dir, "conv", 0).Revision, "refused rewinds write nothing")
}
