package adapter_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/session"
)

// TestLoadRevision: revision 0 is ErrNotFound once ready passes, ready's
// own error before that, and never a load; any other revision is load's.
func TestLoadRevision(t *testing.T) {
	loads := 0
	load := func() (sessionstore.Record, error) {
		loads++
		return sessionstore.Record{Revision: 3}, nil
	}
	ok := func() error { return nil }
	closed := func() error { return sessionstore.ErrClosed }

	_, err := adapter.LoadRevision("s", 0, ok, load)
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	require.ErrorContains(t, err, "session s revision 0")
	_, err = adapter.LoadRevision("s", 0, closed, load)
	require.ErrorIs(t, err, sessionstore.ErrClosed)
	require.False(t, errors.Is(err, sessionstore.ErrNotFound))
	require.Zero(t, loads, "revision 0 is never read")

	rec, err := adapter.LoadRevision("s", 3, closed, load)
	require.NoError(t, err, "ready is load's to check for other revisions")
	require.Equal(t, uint64(3), rec.Revision)
	require.Equal(t, 1, loads)
}

// TestReadyIDs: the store's readiness error comes first, then the first
// invalid ID's; no IDs (all sessions) is ready's alone.
func TestReadyIDs(t *testing.T) {
	require.ErrorIs(t, adapter.ReadyIDs(sessionstore.ErrClosed, []session.SessionID{"../x"}), sessionstore.ErrClosed)
	require.ErrorIs(t, adapter.ReadyIDs(nil, []session.SessionID{"a", "../x"}), sessionstore.ErrInvalidID)
	require.NoError(t, adapter.ReadyIDs(nil, []session.SessionID{"a", "b"}))
	require.NoError(t, adapter.ReadyIDs(nil, nil))
}

// TestReadySearch: the store's readiness comes before the query's
// validity; a ready store's query is ParseSearch's.
func TestReadySearch(t *testing.T) {
	_, _, err := adapter.ReadySearch(sessionstore.ErrClosed, sessionstore.SearchQuery{Text: " ... "})
	require.ErrorIs(t, err, sessionstore.ErrClosed)
	require.NotErrorIs(t, err, sessionstore.ErrBadQuery)
	_, _, err = adapter.ReadySearch(nil, sessionstore.SearchQuery{Text: " ... "})
	require.ErrorIs(t, err, sessionstore.ErrBadQuery)
	q, fq, err := adapter.ReadySearch(nil, sessionstore.SearchQuery{Text: "osprey"})
	require.NoError(t, err)
	require.Equal(t, sessionstore.DefaultSearchLimit, q.Limit)
	require.Equal(t, "osprey", fq.String())
}
