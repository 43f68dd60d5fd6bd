// Package offline owns the tools that check, repair and copy a directory
// store's sessions, file by file (FORMAT.md "Repaired logs", "Compaction
// and archive/", "Blobs"): Verify's checks of a session (verify.go: every
// record, delta, snapshot, blob and summary.json, and what archive/ and
// forensic/ hold), Repair (repair.go: the cut at the first corruption,
// the sweep of the root's leftovers), salvage (salvage.go: the new log
// that keeps every readable revision and records gaps for the rest), the
// correction of archive entries an older compaction ended too early
// (archivegap.go), Backup (backup.go: a new session copied whole,
// batch.go: many side by side, published together, copycheck.go: each
// copy checked in one pass before it is published;
// incremental.go: one the destination holds brought up to date, its log
// appended to when the destination's is a prefix by the records'
// checksums, copied whole otherwise), Sync between two stores (sync.go:
// the union, with diverged branches as forks), disk usage (du.go) and the
// collection of blobs no record references (blobgc.go).
//
// The tools fill the reports of package jsonlstore/maintenance and
// sessionstore's VerifyReport and UsageReport. The facade (package
// jsonlstore) makes a Store for each call, with its root and a Host: the
// checks every read starts with, and the lease and writer that repair
// works under (taking a lease without recovery, opening the writer,
// saving forensic copies, checking that a session is writable).
//
//	st := offline.New(root, host)
//	sr, err := st.VerifySession(ctx, id, deep)
//	rep, err := st.Repair(ctx, id, maintenance.RepairOptions{Salvage: true})
//
// It must never import the facade, take a lease other than through Host,
// or change a session's files without holding its lease: Verify, disk
// usage and a backup's reading are readers; a backup or sync writes into
// a session that exists already only under its lease; repair, salvage, the archive
// correction and blob collection run under the lease, and every byte they
// remove is first copied into forensic/, durably. The log's and archive's
// formats are record's, logfile's and archive's; replacing a log whole is
// compact's (WriteLog, PublishLog).
package offline
