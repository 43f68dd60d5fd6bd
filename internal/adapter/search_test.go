package adapter_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
)

// TestParseSearch: a query is normalized as SearchQuery.Normalize does
// (defaults filled in, bounds kept) and its text parsed; what Normalize
// refuses is ErrBadQuery.
func TestParseSearch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		q         sessionstore.SearchQuery
		wantLimit int
		wantTerms string
		wantErr   error
	}{
		{name: "defaults", q: sessionstore.SearchQuery{Text: `flaky "go te*"`}, wantLimit: sessionstore.DefaultSearchLimit, wantTerms: `flaky "go te*"`},
		{name: "limit capped", q: sessionstore.SearchQuery{Text: "osprey", Limit: 1 << 20}, wantLimit: sessionstore.MaxSearchLimit, wantTerms: "osprey"},
		{name: "no word", q: sessionstore.SearchQuery{Text: " ... "}, wantErr: sessionstore.ErrBadQuery},
		{name: "negative limit", q: sessionstore.SearchQuery{Text: "x", Limit: -1}, wantErr: sessionstore.ErrBadQuery},
		{name: "too long", q: sessionstore.SearchQuery{Text: strings.Repeat("w ", 5000)}, wantErr: sessionstore.ErrBadQuery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, fq, err := adapter.ParseSearch(tc.q)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				_, nerr := tc.q.Normalize()
				require.ErrorIs(t, nerr, tc.wantErr, "Normalize refuses it too")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantLimit, q.Limit)
			require.Equal(t, tc.wantTerms, fq.String())
			nq, err := tc.q.Normalize()
			require.NoError(t, err)
			require.Equal(t, nq, q, "as Normalize normalizes it")
		})
	}
}

// TestSearchHit: every field of the index's hit is carried over, the
// snippet is cut around the match and its marks point at the matched
// words in the snippet.
func TestSearchHit(t *testing.T) {
	text := strings.Repeat("filler words before ", 20) + "the osprey dives" + strings.Repeat(" and more words after", 20)
	at := strings.Index(text, "osprey")
	h := fulltext.Hit{ID: "s1", Title: "Birds", Message: 3, Role: session.RoleAssistant, Field: "text", Revision: 7,
		Updated: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Score: 2.5, Text: text,
		Spans: []fulltext.Span{{Start: at, End: at + len("osprey")}}}
	got := adapter.SearchHit(h)
	require.Equal(t, session.SessionID("s1"), got.ID)
	require.Equal(t, "Birds", got.Title)
	require.Equal(t, 3, got.Message)
	require.Equal(t, session.RoleAssistant, got.Role)
	require.Equal(t, "text", got.Field)
	require.Equal(t, uint64(7), got.Revision)
	require.Equal(t, h.Updated, got.UpdatedAt)
	require.InDelta(t, 2.5, got.Score, 0)
	require.Less(t, len(got.Snippet), len(text), "the snippet is cut")
	require.Len(t, got.Marks, 1)
	m := got.Marks[0]
	require.Equal(t, "osprey", got.Snippet[m.Start:m.End])
}
