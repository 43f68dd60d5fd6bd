package adapter_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// TestForkSnapshot: a fork names its parent and root, keeps the parent's
// role, labels and conversation, and drops the origin (a re-import of the
// parent's source continues the parent, never its fork).
func TestForkSnapshot(t *testing.T) {
	cfg := sessiontest.Config("parent")
	cfg.Relationship = session.SessionRelationship{ParentID: "grand", RootID: "root", Role: "reviewer", ToolCallID: "call-1"}
	cfg.Labels = map[string]string{"team": "a"}
	cfg.Origin = &session.Origin{Tool: "codex", SessionID: "thread-1"}
	s, err := session.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "hi", sessiontest.Epoch)))
	src, err := sessnap.Of(s)
	require.NoError(t, err)

	fork := adapter.ForkSnapshot(src, "child")
	require.Equal(t, session.SessionID("child"), fork.ID)
	require.Equal(t, session.SessionRelationship{ParentID: "parent", RootID: "root", Role: "reviewer"}, fork.Relationship)
	require.Nil(t, fork.Origin)
	require.Equal(t, src.Labels, fork.Labels)
	require.Len(t, fork.Messages, 1)
	restored, err := fork.Restore()
	require.NoError(t, err)
	require.Nil(t, restored.Origin())
	require.NotNil(t, src.Origin, "the parent keeps its origin")
}

// TestEncodeSnapshot: the one check before a write. A snapshot of the
// session encodes as sessnap.Marshal encodes it, its format filled in; one
// of another session, or one that does not restore, is ErrInvalidSnapshot;
// one above the cap (0: the default cap) is ErrTooLarge.
func TestEncodeSnapshot(t *testing.T) {
	snap := sessiontest.Snap(t, sessiontest.New("a"))
	large := sessiontest.New("big")
	require.NoError(t, large.AppendMessage(session.TextMessage(session.RoleUser, strings.Repeat("x", 4<<10), sessiontest.Epoch)))
	broken := snap
	broken.State = "no-such-state"
	noFormat := snap
	noFormat.Format = ""
	want, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		id      session.SessionID
		snap    sessnap.Snapshot
		max     int
		want    []byte
		wantErr error
	}{
		{name: "sound", id: "a", snap: snap, want: want},
		{name: "format filled in", id: "a", snap: noFormat, want: want},
		{name: "another session", id: "b", snap: snap, wantErr: sessionstore.ErrInvalidSnapshot},
		{name: "does not restore", id: "a", snap: broken, wantErr: sessionstore.ErrInvalidSnapshot},
		{name: "above the cap", id: "big", snap: sessiontest.Snap(t, large), max: 1 << 10, wantErr: sessionstore.ErrTooLarge},
		{name: "default cap", id: "big", snap: sessiontest.Snap(t, large), max: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := adapter.EncodeSnapshot(tc.id, tc.snap, tc.max)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.want != nil {
				require.Equal(t, string(tc.want), string(got))
			}
			back, err := sessnap.Unmarshal(got)
			require.NoError(t, err)
			require.Equal(t, tc.id, back.ID)
		})
	}
}

// TestCheckID: the snapshot-of-this-session rule, which the appender and
// EncodeSnapshot both call.
func TestCheckID(t *testing.T) {
	snap := sessiontest.Snap(t, sessiontest.New("a"))
	require.NoError(t, adapter.CheckID("a", snap))
	err := adapter.CheckID("b", snap)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
	require.EqualError(t, err, `sessionstore: invalid snapshot: snapshot id "a" in session b`)
}

// TestForkID: the source's ID is checked before the store's readiness,
// an empty new ID becomes a new one, and readiness is asked of the ID
// the fork gets.
func TestForkID(t *testing.T) {
	closed := func(context.Context, session.SessionID) error { return sessionstore.ErrClosed }
	_, err := adapter.ForkID(t.Context(), "../x", "b", closed)
	require.ErrorIs(t, err, sessionstore.ErrInvalidID)
	_, err = adapter.ForkID(t.Context(), "a", "b", closed)
	require.ErrorIs(t, err, sessionstore.ErrClosed)

	var asked session.SessionID
	ready := func(_ context.Context, id session.SessionID) error { asked = id; return nil }
	id, err := adapter.ForkID(t.Context(), "a", "", ready)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	require.Equal(t, id, asked)
	id, err = adapter.ForkID(t.Context(), "a", "b", ready)
	require.NoError(t, err)
	require.Equal(t, session.SessionID("b"), id)
	require.Equal(t, id, asked)
}
