package summary_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// TestProjectCarriesOrigin: an imported session's summary names its
// source, as a copy (neither the snapshot's nor the index's memory).
func TestProjectCarriesOrigin(t *testing.T) {
	cfg := sessiontest.Config("imported")
	cfg.Origin = &session.Origin{Tool: "codex", SessionID: "t1", Path: "/r/a.jsonl", Lines: 3, Bytes: 120, SHA256: strings.Repeat("ab", 32)}
	s, err := session.New(cfg)
	require.NoError(t, err)
	snap := sessiontest.Snap(t, s)

	got := summary.Project(&snap, 1, 1, sessiontest.Epoch)
	require.Equal(t, cfg.Origin, got.Origin)
	got.Origin.Path = "changed"
	require.Equal(t, "/r/a.jsonl", snap.Origin.Path, "the summary's origin is a copy")

	ix := summary.NewIndex()
	put := summary.Project(&snap, 1, 1, sessiontest.Epoch)
	ix.Put(put)
	put.Origin.Bytes = 1
	back, ok := ix.Get("imported")
	require.True(t, ok)
	require.Equal(t, int64(120), back.Origin.Bytes, "the index keeps its own copy")

	plain := sessiontest.Snap(t, sessiontest.InState("plain", session.StateIdle))
	require.Nil(t, summary.Project(&plain, 1, 1, sessiontest.Epoch).Origin)
}
