package memstore

import (
	"context"
	"sync"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// searchIndex is the store's full-text index, fed every revision as it
// is appended (under the store's lock, so in order) and told of every
// deletion. Its own lock lets searches run beside appends.
type searchIndex struct {
	mu sync.Mutex
	ix *fulltext.Index
}

func (si *searchIndex) appended(snap *sessnap.Snapshot, rev uint64, sum *summary.Summary) {
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.ix == nil {
		si.ix = fulltext.NewIndex()
	}
	si.ix.Put(fulltext.Revision{ID: snap.ID, Revision: rev, Updated: sum.UpdatedAt, Title: snap.Title,
		Project: snap.Workspace.Project, Labels: snap.Labels, Messages: snap.Messages})
}

func (si *searchIndex) deleted(id session.SessionID) {
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.ix != nil {
		si.ix.Remove(id)
	}
}

// Search implements sessionstore.Store over the index in memory: every
// revision is indexed when it is appended, so the index is always
// current.
func (s *Store) Search(ctx context.Context, q sessionstore.SearchQuery) (sessionstore.SearchResult, error) {
	q, fq, err := adapter.ReadySearch(s.ready(ctx), q)
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	s.search.mu.Lock()
	var hits []fulltext.Hit
	if s.search.ix != nil {
		hits = s.search.ix.Search(fq, adapter.SearchFilter(q), q.Limit)
	}
	s.search.mu.Unlock()
	return sessionstore.SearchResult{Hits: adapter.SearchHits(hits)}, nil
}
