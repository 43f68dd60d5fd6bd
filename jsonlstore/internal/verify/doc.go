// Package verify checks a directory store's sessions, file by file, as
// the facade's Verify promises (FORMAT.md "log.jsonl", "summary.json",
// "Compaction and archive/", "Blobs"): every record of the archives and
// the log with the sequence rules, each delta applied and checked against
// the snapshot it names, each snapshot decoded and restored, every blob
// and page referenced, the bytes after the last record, summary.json
// against the log, and what archive/ and forensic/ hold besides. It
// reports findings (problems, notes) in sessionstore's
// SessionVerifyReport; Records is the forward check repair cuts at, and
// Blobs the blob check salvage keeps revisions by.
//
//	ck := verify.New(root, gate)
//	sr, err := ck.Session(ctx, id, deep)
//
// It must never change a file, take a lease or call a finding corruption
// before a fresh view of the log confirms it (logfile.Read): it is a
// reader, safe on a live store. The log's codec and sequence rules are
// internal/record's; what a blob is, blobfile's.
package verify
