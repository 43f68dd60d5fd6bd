// Package blobgc collects a session's blobs no record references
// (FORMAT.md "Blobs"): those an append left when it failed or crashed
// after writing them, or a refused full record's pages, and temporary
// blob files. Compaction, redaction and repair call it under the
// session's lease. What counts as a reference is generous: every
// "sha256":"<64 hex>" in any record of the log or the archives, in any
// forensic copy, and in any page those reference.
//
//	gc := blobgc.New(root, gate)
//	c, err := gc.Collect(ctx, id, w.ForgetBlob)
//
// It must never run without the caller holding the session's lease,
// remove a blob while any reference is unread (a damaged log, archive or
// page: it then removes none), or decide what a blob's name or content
// is (blobfile's and internal/blob's).
package blobgc
