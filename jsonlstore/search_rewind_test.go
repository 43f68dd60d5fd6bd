package jsonlstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// TestSearchAfterRewind: a rewind is a delta that drops messages (record
// format 5), not one that only appends, so the index's catch-up must not
// keep the dropped text: after a rewind a search no longer finds a
// dropped message's word, in the index and in what a search reads beside
// it, and still finds the kept ones and those added after the rewind.
func TestSearchAfterRewind(t *testing.T) {
	ctx := context.Background()
	st, err := Open(t.TempDir(), withSearch(Options{}))
	require.NoError(t, err)
	defer st.Close()
	find := func(word string) int {
		t.Helper()
		res, err := st.Search(ctx, sessionstore.SearchQuery{Text: word, Limit: 10})
		require.NoError(t, err)
		return len(res.Hits)
	}
	h, err := sessionstore.Open(ctx, st, "rewound", sessionstore.HandleOptions{})
	require.NoError(t, err)
	_, err = h.Add(ctx, session.TextMessage(session.RoleUser, "keep the aardvark", sessiontest.Epoch))
	require.NoError(t, err)
	_, err = h.Add(ctx, session.TextMessage(session.RoleAssistant, "a quokka appears", sessiontest.Epoch))
	require.NoError(t, err)
	require.Equal(t, 1, find("quokka"))
	aardvark := find("aardvark") // the title and the prompt
	require.NotZero(t, aardvark)
	require.NoError(t, st.FlushSearch(ctx)) // the index holds the quokka

	_, err = h.Rewind(ctx, 1)
	require.NoError(t, err)
	require.Zero(t, find("quokka"), "a dropped message is not found (read beside the index)")
	require.Equal(t, aardvark, find("aardvark"))
	require.NoError(t, st.FlushSearch(ctx))
	require.Zero(t, find("quokka"), "a dropped message is not found (in the index)")

	_, err = h.Add(ctx, session.TextMessage(session.RoleAssistant, "a wombat now", sessiontest.Epoch))
	require.NoError(t, err)
	require.NoError(t, h.Close(ctx))
	require.Equal(t, 1, find("wombat"))
	require.Equal(t, aardvark, find("aardvark"))
	require.Zero(t, find("quokka"))
	require.NoError(t, st.FlushSearch(ctx))
	require.Equal(t, 1, find("wombat"))
	require.Zero(t, find("quokka"))
}
