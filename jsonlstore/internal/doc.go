// Package internal holds no code: its directories are the rooms of the
// directory store, one per artifact of FORMAT.md, to which the facade
// (package jsonlstore: the options, the store, the writer and the
// orchestration of every call) hands each call. Each room's doc says what
// it owns and what it must never do:
//
//	layout       names and permissions under the root, settings.json, the root check, the store's sentinels, Root
//	lease        the seam to the sessions' leases: the leaser, the held handle, lock retries, lease status for readers
//	logfile      log.jsonl and summary.json as readers see them: views, history, loads, damage, import, export, a holder's pre-write checks
//	archive      archive/: the manifest and its segments
//	blobfile     blobs/: names, writing, the checks of a blob and of references, the read cache
//	compact      compaction of a log into archive/, and its dry run
//	catalog      the catalog's bytes (the codec)
//	catalogfile  the catalog's build, marks and trust rules, its check, and its word on the logs for search
//	listing      the one place that chooses how a listing is served (indexed, catalog, scan), and serves it
//	watch        the watcher behind Watch and indexed listings
//	searchhost   the seam to the search index (no rule, no file, no SQLite)
//	searchindex  the full-text index in .search/ (SQLite FTS5, with searchdb), linked only through jsonlstore/fts
//	offline      verify, repair, salvage, backup and sync, disk usage, blob collection
//	toolhost     the seam offline's backup and sync and repair share to the facade (no rule, no file)
//	purge        the redaction of what a session already stores
//	secretscan   the scan for secrets of every file a session keeps: logs, archives, blobs, forensic copies, retired packs
//	retire       .retired/: packs, the journal, the policy, which sessions a retirement takes, retire, restore, search
//	roottest     test-only builder of roots for the rooms' tests
//
// The public leaves beside the facade are jsonlstore/maintenance (the
// maintenance operations' options, reports and errors) and jsonlstore/fts
// (the search component).
package internal
