package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/require"

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
