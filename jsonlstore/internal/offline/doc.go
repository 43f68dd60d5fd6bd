// Package offline owns the copies of a directory store's sessions into
// another store, file by file (FORMAT.md "log.jsonl", "Compaction and
// archive/", "Blobs"): Backup (backup.go: a new session copied whole,
// batch.go: many side by side, published together, copycheck.go: each
// copy checked in one pass before it is published; incremental.go: one
// the destination holds brought up to date, its log appended to when the
// destination's is a prefix by the records' checksums, copied whole
// otherwise), and Sync between two stores (sync.go: the union, with
// diverged branches as forks).
//
// The tools fill the reports of package jsonlstore/maintenance. The
// facade (package jsonlstore) makes a Store for each call, with its root
// and a Host: the checks every read starts with, and what a backup or
// sync does under a session's lease (locking it, checking that it is
// writable, marking the catalog, saving forensic copies).
//
//	src, dst := offline.New(root, host), offline.New(dstRoot, dstHost)
//	ids, err := src.Backup(ctx, dst, nil, forEach, maintenance.BackupOptions{}, &rep)
//
// It must never import the facade, take a lease other than through Host,
// or change a session's files without holding its lease: a backup's
// reading is a reader's; a backup or sync writes into a session that
// exists already only under its lease, and every byte it replaces is
// first copied into forensic/, durably. Checking a copy that does not
// check in one pass is verify's (Checker.Session); the log's and
// archive's formats are record's, logfile's and archive's; replacing a
// log whole is compact's (WriteLog, PublishLog).
package offline
