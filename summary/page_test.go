package summary_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// TestSelectionPagesAsQuery: a Selection (what jsonlstore's List makes,
// from its watcher's summaries or from a scan) pages exactly as
// Index.Query does, for every order, filters, page sizes and cursors.
func TestSelectionPagesAsQuery(t *testing.T) {
	ix := summary.NewIndex()
	defer ix.Close()
	var all []summary.Summary
	states := []session.State{session.StateIdle, session.StateRunning, session.StateStopped}
	kinds := []session.SessionKind{session.KindPrimary, session.KindSubagent}
	for i := range 300 {
		s := summary.Summary{
			ID:        session.SessionID(fmt.Sprintf("s%03d", (i*7919)%300)),
			State:     states[i%len(states)],
			Kind:      kinds[i%len(kinds)],
			CreatedAt: sessiontest.Epoch.Add(time.Duration(i%17) * time.Second), // ties on purpose
			UpdatedAt: sessiontest.Epoch.Add(time.Duration(i%23) * time.Minute),
			Revision:  uint64(i + 1),
		}
		if i%5 == 0 {
			s.ParentID = "s001"
		}
		all = append(all, s)
		ix.Put(s)
	}
	queries := []summary.Query{
		{}, {Limit: 1}, {Limit: 7}, {Limit: 299}, {Limit: 300}, {Limit: summary.MaxLimit},
		{States: []session.State{session.StateRunning}, Limit: 9},
		{Kinds: []session.SessionKind{session.KindSubagent}, ParentID: "s001", Limit: 4},
		{UpdatedSince: sessiontest.Epoch.Add(10 * time.Minute), Limit: 11},
	}
	for _, order := range []summary.Order{summary.OrderUpdatedDesc, summary.OrderUpdatedAsc,
		summary.OrderCreatedDesc, summary.OrderCreatedAsc, summary.OrderIDAsc} {
		for _, q := range queries {
			q.Order = order
			t.Run(fmt.Sprintf("%s/%+v", order, q), func(t *testing.T) {
				for pages := 0; ; pages++ {
					require.Less(t, pages, 400)
					want, err := ix.Query(q)
					require.NoError(t, err)
					sel, err := summary.NewSelection(q, func(i int) *summary.Summary { return &all[i] })
					require.NoError(t, err)
					sel.Reset(len(all))
					for i := range all {
						sel.Offer(i)
					}
					entries, next := sel.Page(sel.Sorted())
					got := make([]session.SessionID, len(entries))
					for j, i := range entries {
						got[j] = all[i].ID
					}
					wantIDs := make([]session.SessionID, len(want.Items))
					for i, s := range want.Items {
						wantIDs[i] = s.ID
					}
					require.Equal(t, wantIDs, got)
					require.Equal(t, want.Next, next)

					// The same selection over keys alone (NewSelectionOf),
					// the caller filtering.
					byKey, err := summary.NewSelectionOf(q, func(i int) session.SessionID { return all[i].ID })
					require.NoError(t, err)
					nq := byKey.Query()
					byKey.Reset(len(all))
					for i := range all {
						if !nq.Filters() || nq.Match(&all[i]) {
							byKey.OfferKey(i, summary.KeyOf(nq.Order, &all[i]))
						}
					}
					entries, next = byKey.Page(byKey.Sorted())
					got = got[:0]
					for _, i := range entries {
						got = append(got, all[i].ID)
					}
					require.Equal(t, wantIDs, got, "NewSelectionOf")
					require.Equal(t, want.Next, next, "NewSelectionOf")
					if next == "" {
						return
					}
					q.Cursor = next
				}
			})
		}
	}
	_, err := summary.NewSelection(summary.Query{Cursor: "garbage"}, nil)
	require.ErrorIs(t, err, summary.ErrBadCursor)
}

// TestQueryFilters: a query without a filter matches every summary, and
// each filter alone makes Filters true.
func TestQueryFilters(t *testing.T) {
	require.False(t, summary.Query{Order: summary.OrderIDAsc, Limit: 3, Cursor: "x"}.Filters())
	for _, q := range []summary.Query{
		{States: []session.State{session.StateIdle}},
		{Kinds: []session.SessionKind{session.KindPrimary}},
		{ParentID: "p"},
		{UpdatedSince: sessiontest.Epoch},
		{Project: "/src"},
		{Labels: map[string]string{"team": "a"}},
	} {
		require.True(t, q.Filters(), "%+v", q)
		require.False(t, q.Match(&summary.Summary{ID: "x", State: session.StateRunning, Kind: session.KindDebug}), "%+v", q)
	}
}
