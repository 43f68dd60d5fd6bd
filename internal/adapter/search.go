package adapter

import (
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/fulltext"
)

// ParseSearch is q.Normalize that also returns q's text parsed: what an
// adapter's Search does first. Errors wrap sessionstore.ErrBadQuery.
func ParseSearch(q sessionstore.SearchQuery) (sessionstore.SearchQuery, fulltext.Query, error) {
	q, err := q.Normalize()
	if err != nil {
		return q, fulltext.Query{}, err
	}
	// Normalize has parsed the text once already, to validate it: this
	// parse cannot fail, but its error is kept rather than assumed away.
	fq, err := fulltext.Parse(q.Text)
	if err != nil {
		return q, fq, fmt.Errorf("%w: %w", sessionstore.ErrBadQuery, err)
	}
	return q, fq, nil
}

// SearchHit is the contract's hit of the index's hit h, its snippet cut.
func SearchHit(h fulltext.Hit) sessionstore.SearchHit {
	snip, marks := fulltext.Snippet(h.Text, h.Spans, fulltext.SnippetBytes)
	out := sessionstore.SearchHit{ID: h.ID, Title: h.Title, Field: h.Field, Message: h.Message, Role: h.Role,
		Revision: h.Revision, UpdatedAt: h.Updated, Score: h.Score, Snippet: snip}
	for _, m := range marks {
		out.Marks = append(out.Marks, sessionstore.TextSpan{Start: m.Start, End: m.End})
	}
	return out
}
