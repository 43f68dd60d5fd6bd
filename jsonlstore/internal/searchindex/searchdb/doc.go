// Package searchdb is the file store's search index: one SQLite database
// (modernc.org/sqlite, pure Go) with an FTS5 table of the sessions'
// titles and messages, and a row per session that says which revision of
// it the index holds and which state of its log that revision was read
// from. It is a cache: jsonlstore proves each session's row against its
// log before it uses it, brings stale rows up to date, and rebuilds the
// whole when the file is missing, damaged or of another version.
//
// Layout (ROOT/.search/index.db, with SQLite's -wal and -shm beside it):
//
//	PRAGMA user_version = 2
//	sessions(sid, id, rev, messages, digest, title, title_rev, updated, project,
//	         log_dev, log_ino, log_size, log_mtime)
//	labels(sid, key, value)
//	msgs(rowid, sid, msg, role, rev)         -- msg -1: the title
//	docs: fts5(title, text, tool)            -- rowid = msgs.rowid
//
// Every write is one transaction that checks the row it builds on, so
// concurrent writers in many processes never stack an update on a state
// it was not computed from.
//
//	db, err := searchdb.Open(path, searchdb.OpenOptions{Create: true})
//	applied, err := db.Apply(ctx, []searchdb.Update{u}, searchdb.NoWait)
//	hits, err := db.Search(ctx, q, filter, 20)
package searchdb
