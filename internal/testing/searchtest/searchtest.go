package searchtest

import (
	"context"
	"errors"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/summary"
)

// Reference answers q over s's sessions without s's own index: by
// reading every selected session's history into an index in memory (the
// revision of each message is the one it appeared at). It is the
// reference the search checks compare an adapter's index with.
func Reference(ctx context.Context, s sessionstore.Store, q sessionstore.SearchQuery) (sessionstore.SearchResult, error) {
	q, fq, err := adapter.ParseSearch(q)
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	var res sessionstore.SearchResult
	ix := fulltext.NewIndex()
	lq := q.Filter()
	lq.Limit = summary.MaxLimit
	for page, err := range sessionstore.Pages(ctx, s, lq) {
		if err != nil {
			return sessionstore.SearchResult{}, err
		}
		res.Unreadable = page.Unreadable // every page lists them
		for _, sum := range page.Items {
			for rec, err := range s.History(ctx, sum.ID) {
				if errors.Is(err, sessionstore.ErrRevisionsMissing) {
					continue // the revisions a repair set aside hold nothing to search
				}
				if err != nil {
					return sessionstore.SearchResult{}, err
				}
				ix.Put(fulltext.Revision{ID: rec.ID, Revision: rec.Revision, Updated: rec.Time, Title: rec.Snapshot.Title,
					Project: rec.Snapshot.Workspace.Project, Labels: rec.Snapshot.Labels, Messages: rec.Snapshot.Messages})
			}
		}
	}
	res.Hits = adapter.SearchHits(ix.Search(fq, fulltext.Filter{NoTools: q.NoTools}, q.Limit))
	return res, nil
}
