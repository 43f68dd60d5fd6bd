// Package searchindex is the directory store's full-text search index:
// the files in ROOT/.search/ (an SQLite FTS5 database, package searchdb,
// the lock that guards its replacement and the one its writers take
// turns at), the queue the writers feed
// it through, and the catch-up that proves each session's row against
// its log before a search answers (search.go says how). It is the
// component a store is opened with (jsonlstore.Options.Search); package
// jsonlstore/fts hands it out.
//
// Layout (FORMAT.md "The search index"):
//
//	ROOT/.search/
//	  index.db                the index (with SQLite's -wal and -shm beside it)
//	  lock                    shared to open index.db, exclusive to replace it
//	  writer                  exclusive to write index.db: one writer at a time
//	  .index-<random>.tmp     a new index being made (renamed over index.db)
//
// It reaches the store only through searchhost.Host: the root, the
// sessions' logs read as records, the catalog's word on them. It must
// never import jsonlstore, write anything outside .search/, or block or
// fail an append (a writer's update is queued and may be dropped: the
// next search reads what the index missed from the logs).
//
//	st, err := jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
package searchindex
