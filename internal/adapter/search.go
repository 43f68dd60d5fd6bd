package adapter

import (
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/summary"
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

// ReadySearch is what a store's Search begins with, once the store's own
// readiness (Ready) gave ready: ready's error first (a closed store says
// so whatever the query), then ParseSearch of q.
func ReadySearch(ready error, q sessionstore.SearchQuery) (sessionstore.SearchQuery, fulltext.Query, error) {
	if ready != nil {
		return q, fulltext.Query{}, ready
	}
	return ParseSearch(q)
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

// SearchHits is SearchHit of each of hs: never nil, so that a result
// without hits has an empty list.
func SearchHits(hs []fulltext.Hit) []sessionstore.SearchHit {
	out := make([]sessionstore.SearchHit, 0, len(hs))
	for _, h := range hs {
		out = append(out, SearchHit(h))
	}
	return out
}

// SearchFilter is the index's filter of query q (parsed): whether tools
// are searched, and which sessions by their project and labels.
func SearchFilter(q sessionstore.SearchQuery) fulltext.Filter {
	filter := q.Filter()
	return fulltext.Filter{NoTools: q.NoTools, Session: func(project string, labels map[string]string) bool {
		return filter.Match(&summary.Summary{Project: project, Labels: labels})
	}}
}
