package sessionstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// TestPages: Pages yields every page from the query's cursor to the last,
// stops when the loop breaks, and yields List's error once, last.
func TestPages(t *testing.T) {
	ctx := context.Background()
	st := memWith(t, "p1", "p2", "p3", "p4", "p5")
	q := summary.Query{Order: summary.OrderIDAsc, Limit: 2}

	var got [][]session.SessionID
	for page, err := range sessionstore.Pages(ctx, st, q) {
		require.NoError(t, err)
		var ids []session.SessionID
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		got = append(got, ids)
	}
	require.Equal(t, [][]session.SessionID{{"p1", "p2"}, {"p3", "p4"}, {"p5"}}, got)

	first, err := st.List(ctx, q)
	require.NoError(t, err)
	q.Cursor = first.Next
	n := 0
	for page, err := range sessionstore.Pages(ctx, st, q) {
		require.NoError(t, err)
		require.Equal(t, session.SessionID("p3"), page.Items[0].ID, "the first page is the one after the cursor")
		n++
		break
	}
	require.Equal(t, 1, n)

	q.Cursor = "not a cursor!"
	var errs []error
	for _, err := range sessionstore.Pages(ctx, st, q) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], summary.ErrBadCursor)

	closed := memstore.New(memstore.Options{})
	require.NoError(t, closed.Close())
	for _, err := range sessionstore.Pages(ctx, closed, summary.Query{}) {
		require.ErrorIs(t, err, sessionstore.ErrClosed)
	}
}
