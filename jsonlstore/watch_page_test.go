package jsonlstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// TestWatchPageSelection: the selection List makes (from the watcher's
// index or from a scan) pages exactly as summary.Index.Query does, for
// every order, filters, page sizes and cursors.
func TestWatchPageSelection(t *testing.T) {
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
					sel, err := newPageSelection(q, func(i int) *summary.Summary { return &all[i] })
					require.NoError(t, err)
					sel.reset(len(all))
					for i := range all {
						sel.offer(i)
					}
					entries, next := sel.page(sel.sorted())
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
					if next == "" {
						return
					}
					q.Cursor = next
				}
			})
		}
	}
	_, err := newPageSelection(summary.Query{Cursor: "garbage"}, nil)
	require.ErrorIs(t, err, summary.ErrBadCursor)
}

// TestWatchSummaryKeys: decoding only the ranking fields of summary.json
// accepts exactly what decodeSummaryFile accepts, with the same values.
func TestWatchSummaryKeys(t *testing.T) {
	sum := summary.Summary{
		ID: "k", Title: "a title", State: session.StateStopped, Kind: session.KindSubagent, ParentID: "p",
		CreatedAt: sessiontest.Epoch, UpdatedAt: sessiontest.Epoch.Add(time.Hour), Revision: 7, Generation: 2,
	}
	sf := summaryFile{Log: vfs.Identity{Dev: 1, Ino: 2}, LogSize: 5000, LastOffset: 4000, Revision: 7, Summary: sum}
	good, err := encodeSummaryFile(sf)
	require.NoError(t, err)
	reencode := func(f func(*summaryFile)) []byte {
		c := sf
		f(&c)
		b, err := encodeSummaryFile(c)
		require.NoError(t, err)
		return b
	}
	flipped := append([]byte(nil), good...)
	flipped[20] ^= 1
	cases := []struct {
		name   string
		b      []byte
		id     session.SessionID
		wantOK bool
	}{
		{"good", good, "k", true},
		{"padded", append(append([]byte(nil), good...), "      "...), "k", true},
		{"other session", good, "j", false},
		{"torn", good[:len(good)-5], "k", false},
		{"empty", nil, "k", false},
		{"flipped bit", flipped, "k", false},
		{"revision zero", reencode(func(f *summaryFile) { f.Revision, f.Summary.Revision = 0, 0 }), "k", false},
		{"revisions disagree", reencode(func(f *summaryFile) { f.Summary.Revision = 6 }), "k", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			full, okFull := decodeSummaryFile(c.b, c.id)
			keys, okKeys := decodeSummaryKeys(c.b, c.id)
			require.Equal(t, c.wantOK, okFull)
			require.Equal(t, okFull, okKeys)
			if !okKeys {
				return
			}
			require.Equal(t, full.Log, keys.Log)
			require.Equal(t, full.LogSize, keys.LogSize)
			r := keys.ranked()
			require.True(t, sameRank(&full.Summary, &r))
			require.Equal(t, full.Revision, r.Revision)
		})
	}
}
