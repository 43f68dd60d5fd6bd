package fts

import (
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
)

// New returns the full-text search index, for jsonlstore.Options.Search.
// One value serves any number of stores: each store opened with it has
// an index handle of its own.
func New() jsonlstore.SearchIndex { return searchindex.New() }
