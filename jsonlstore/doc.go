// Package jsonlstore is the file adapter of the sessionstore contract: a
// directory per session under a root, holding an append-only JSONL log of
// snapshot revisions, a filesystem lease, and a summary for listings.
//
// # Layout
//
//	ROOT/
//	  <session-id>/           0700, one per session (IDs: sessionstore.ValidateID)
//	    log.jsonl             0600, append-only, one record per line (FORMAT.md)
//	    lease.lock            flock target; never deleted while the session exists
//	    lease.json            generation, owner identity, heartbeat, released flag
//	    summary.json          projection of the latest record (a cache)
//	    forensic/             bytes removed by recovery or repair, never lost
//	  .tmp-<id>-<rand>/       a session being created (renamed into place)
//	  .trash-<id>-<rand>/     a session being deleted (removed after the rename)
//	  .catalog/               the listing catalog: every session's summary (a cache)
//	    catalog, root, lock   the catalog, the root as it vouches for, its writers' lock
//	    marks/<id>.<gen>      a lease that may change the session's log
//	  .search/                the full-text search index (a cache; Options.Search)
//
// # Guarantees
//
//   - An append is one write(2) of the whole line to an O_APPEND descriptor,
//     then fdatasync; Append returns only after both. New files and
//     directories are followed by an fsync of their parent.
//   - Session creation is atomic (temporary directory, then
//     RENAME_NOREPLACE); deletion is a rename to a trash name, then removal.
//   - Readers never modify a session's files and take no lease (a listing
//     may rewrite the catalog, a search the search index: caches outside
//     every session, never needed for a correct answer). Loading the latest
//     revision reads the log from its end. A reader that meets an anomaly
//     confirms it on a fresh view before calling it corruption, so a live
//     store never reports false corruption.
//   - Bytes after the last valid record that a single torn append can
//     explain (an uncommitted tail) are ignored by readers; the next lease
//     holder copies them into forensic/ (synced) and only then truncates
//     them. Anything else is corruption: a *sessionstore.CorruptionError
//     with file and offset, and nothing is removed automatically.
//   - All access inside ROOT goes through os.Root, and no symlink is
//     followed inside it.
//   - A session directory without a usable log (missing, or not a regular
//     file) is corruption (ErrNoLog) and nothing is created in it; a log
//     with a second hard link is never written to (ErrLinkedLog), and
//     summary.json is never written through one. Store-wide operations
//     report a session they cannot read (summary.Page.Unreadable, the
//     reports' Unreadable lists) and go on with the others.
//   - Run as root on another user's store, the store gives every file and
//     directory it creates to that user.
//
// # The catalog
//
// List answers a fresh process from .catalog/catalog, one file, instead of
// every session's summary.json. A holder marks a session
// (.catalog/marks/<id>.<generation>, synced once per lease) before it
// changes the log, so a session without a mark is as its entry says; every
// entry a listing returns is also proved current by an lstat of its log,
// and a catalog that cannot be believed (missing, damaged, another
// program's, its marks directory replaced) is not used: the listing reads
// the sessions and rewrites it. Holders never write the catalog, so an
// append never waits for it. Reindex rebuilds it; VerifyCatalog checks it
// against the logs. FORMAT.md has every byte.
//
// # Search
//
// The full-text search index is a component a store is opened with
// (Options.Search = fts.New(), package jsonlstore/fts), so that a program
// that never searches links no SQLite: this package never imports it.
// Without it, Search, ReindexSearch, VerifySearch and FlushSearch return
// ErrNoSearch; with it, writers feed the index in the background and a
// search proves every row against its log first. The index holds, per
// session, the state of the log it read, so a store opened without it
// still leaves it correct: the next search reads again what changed.
// The store gives the index its files through a seam: the root, the
// sessions' logs read as records, the catalog's word on them.
//
// # Maintenance
//
// Verify, Repair, Backup (BackupWith: incremental), Sync, DiskUsage and
// Compact (and a holder's own compaction, maintenance.Compactor) take
// their options and return their reports as types of package
// jsonlstore/maintenance. The work is done below this package, by the
// offline tools (verify, repair and salvage, backup and sync, disk usage,
// blob collection) and by compaction; this package gives them the lease
// and the writer they work under.
//
// # Rooms
//
// The work is done by one package per artifact of FORMAT.md (the rooms,
// below this one, which their package list describes); this package holds
// the options, the store, the writer and the lease, and hands each call to
// the room that owns it.
//
// Network file systems are not supported: flock and fsync semantics there
// are not what the store relies on.
//
// # Usage
//
//	st, err := jsonlstore.Open(dir, jsonlstore.Options{}) // Search: fts.New() to search
//	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "agent"})
//	rev, err := w.Append(ctx, 1, next) // durable when it returns
//	err = w.Release(ctx)
package jsonlstore
