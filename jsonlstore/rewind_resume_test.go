package jsonlstore_test

import (
	"fmt"
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

// TestRewindAfterResume: a handle that resumed a session from disk (its
// messages a copy of what the load decoded, not the memory that wrote
// them) pops and rewinds with small drop records, not the conversation
// again: the log grows by one line of at most 256 bytes that drops the
// messages, and the session reads as the kept messages each time, with
// every earlier revision still whole.
func TestRewindAfterResume(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	const id = session.SessionID("rewind-resume")
	var msgs []session.Message
	for i := range 30 {
		role := session.RoleUser
		if i%2 == 1 {
			role = session.RoleAssistant
		}
		msgs = append(msgs, session.TextMessage(role, fmt.Sprintf("message %d: %s", i, strings.Repeat("x", 200)), sessiontest.Epoch))
	}
	h, err := sessionstore.Open(ctx, st, id, sessionstore.HandleOptions{})
	require.NoError(t, err)
	_, err = h.Add(ctx, msgs...)
	require.NoError(t, err)
	require.NoError(t, h.Close(ctx))
	all, err := st.Load(ctx, id)
	require.NoError(t, err)

	logPath := filepath.Join(dir, string(id), "log.jsonl")
	for _, step := range []struct {
		name string
		do   func(h *sessionstore.Handle) error
		keep int
	}{
		{"pop", func(h *sessionstore.Handle) error { _, _, err := h.Pop(ctx); return err }, 29},
		{"rewind", func(h *sessionstore.Handle) error { _, err := h.Rewind(ctx, 25); return err }, 25},
		{"rewind to none", func(h *sessionstore.Handle) error { _, err := h.Rewind(ctx, 0); return err }, 0},
	} {
		before, err := os.ReadFile(logPath)
		require.NoError(t, err)
		prev, err := st.Load(ctx, id)
		require.NoError(t, err)
		// A new handle resumes the session from disk, then drops messages.
		h, err := sessionstore.Open(ctx, st, id, sessionstore.HandleOptions{})
		require.NoError(t, err, step.name)
		require.NoError(t, step.do(h), step.name)
		require.NoError(t, h.Close(ctx), step.name)

		after, err := os.ReadFile(logPath)
		require.NoError(t, err)
		require.Equal(t, string(before), string(after[:len(before)]), "%s: the log only grows", step.name)
		added := after[len(before):]
		require.Equal(t, 1, strings.Count(string(added), "\n"), "%s: one record", step.name)
		require.LessOrEqual(t, len(added), 256, "%s: %.300s", step.name, added)
		require.Contains(t, string(added), fmt.Sprintf(`"drop":{"messages":%d}`, len(prev.Snapshot.Messages)-step.keep), step.name)

		rec, err := st.Load(ctx, id)
		require.NoError(t, err)
		require.Equal(t, all.Snapshot.Messages[:step.keep], rec.Snapshot.Messages, step.name)
		old, err := st.LoadRevision(ctx, id, all.Revision)
		require.NoError(t, err)
		require.Equal(t, all.Snapshot.Messages, old.Snapshot.Messages, "%s: the revisions before keep every message", step.name)
	}
	rep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK())
}
