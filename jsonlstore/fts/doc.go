// Package fts is the full-text search index of a directory store: an
// SQLite FTS5 database in ROOT/.search/, a cache of every session's
// titles and messages (FORMAT.md "The search index"). A store searches
// only when it is opened with it:
//
//	st, err := jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
//	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "flaky test"})
//
// It is a package of its own so that a program that never searches links
// no SQLite: jsonlstore never imports it. A store opened without it
// returns jsonlstore.ErrNoSearch from its search methods, and its
// appends still leave the index correct for a store opened with it: the
// index holds, per session, the state of the log it read, and a search
// reads again every session whose log changed since, whoever wrote it.
//
// It owns nothing but the choice of the index: the index itself (a room
// below jsonlstore) keeps its files, feeds on the
// writers' appends and proves its rows against the logs.
package fts
