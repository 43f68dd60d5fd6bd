package retire

import (
	"context"
	"errors"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// History reads the revisions of session id from fsys, a file system in
// memory that holds only that session, unpacked: the store's own reads
// (archives, deltas, blobs) over another root.
type History func(ctx context.Context, fsys vfs.FS, id session.SessionID) iter.Seq2[sessionstore.Record, error]

// Search searches the retired sessions as the live index searches the
// live ones (the same query language and hits), by reading each pack
// whose summary matches the query's filter into memory and its revisions
// into an index in memory, through history: the live index never holds
// them. A pack that cannot be read is in the result's Unreadable.
func (a *Area) Search(ctx context.Context, q sessionstore.SearchQuery, history History) (sessionstore.SearchResult, error) {
	res := sessionstore.SearchResult{Hits: []sessionstore.SearchHit{}}
	q, fq, err := adapter.ParseSearch(q)
	if err != nil {
		return res, err
	}
	filter := q.Filter()
	ix := fulltext.NewIndex()
	for rs, err := range a.List(ctx) {
		if err == nil {
			if rs.AlsoLive || !filter.Match(&rs.Summary) {
				continue
			}
			err = a.index(ctx, rs.ID, ix, history)
		}
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Unreadable = append(res.Unreadable, summary.Unreadable{ID: rs.ID, Reason: err.Error()})
		}
	}
	res.Hits = adapter.SearchHits(ix.Search(fq, adapter.SearchFilter(q), q.Limit))
	return res, nil
}

// index unpacks retired session id into a file system in memory and puts
// each of its revisions, read by history, into ix.
func (a *Area) index(ctx context.Context, id session.SessionID, ix *fulltext.Index, history History) error {
	mem := vfs.NewSim()
	if _, err := a.Unpack(id, mem, string(id)); err != nil {
		return err
	}
	for rec, err := range history(ctx, mem, id) {
		var gap *sessionstore.GapError
		if errors.As(err, &gap) {
			continue
		}
		if err != nil {
			return err
		}
		snap := &rec.Snapshot
		ix.Put(fulltext.Revision{ID: id, Revision: rec.Revision, Updated: rec.Time, Title: snap.Title,
			Project: snap.Workspace.Project, Labels: snap.Labels, Messages: snap.Messages})
	}
	return nil
}
