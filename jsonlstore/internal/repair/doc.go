// Package repair owns the explicit way out of corruption for one session
// of a directory store (FORMAT.md "Repaired logs", "Compaction and
// archive/"): Repair under the session's lease (repair.go: the check of
// the whole log, the cut at the first corruption, the sweep of the root's
// leftovers), salvage (salvage.go: the new log that keeps every readable
// revision and records a gap for the rest), and the correction of archive
// entries an older compaction ended too early (archivegap.go). It fills
// the report of package jsonlstore/maintenance.
//
// The facade (package jsonlstore) makes a Store for each call, with its
// root and a Host: the checks every read starts with, and the lease and
// writer repair works under (taking a lease without recovery, opening the
// writer, saving forensic copies, checking that a session is writable).
//
//	rep, err := repair.New(root, host).Repair(ctx, id, maintenance.RepairOptions{Salvage: true})
//
// It must never import the facade, take a lease other than through Host,
// or change a session's files without holding its lease, and every byte
// it removes is first copied into forensic/, durably. Finding corruption
// is verify's (Records), removing unreferenced blobs blobgc's, the log's
// and archive's formats record's, logfile's and archive's, and replacing
// a log whole compact's (WriteLog, PublishLog).
package repair
