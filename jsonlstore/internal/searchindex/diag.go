package searchindex

import (
	"context"
	"errors"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
	"github.com/sessionstore/sessionstore/session"
)

// For tests and diagnostics of the store that holds the index: what the
// index holds now, without bringing it up to date.

// errNotOpen reports an index this handle does not hold open.
var errNotOpen = errors.New("jsonlstore: search index not open")

// IsOpen reports whether the index holds its file open.
func (x *Index) IsOpen() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.db != nil
}

// States is what the open index holds of every session.
func (x *Index) States(ctx context.Context) (map[session.SessionID]searchdb.State, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.db == nil {
		return nil, errNotOpen
	}
	return x.db.States(ctx)
}

// StatesOf is what the open index holds of sessions ids.
func (x *Index) StatesOf(ctx context.Context, ids []session.SessionID) (map[session.SessionID]searchdb.State, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.db == nil {
		return nil, errNotOpen
	}
	return x.db.StatesOf(ctx, ids)
}
