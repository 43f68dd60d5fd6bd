// Package memstore is the in-memory adapter of the sessionstore contract:
// for tests, and for ephemeral agents whose sessions need not outlive the
// process. It passes the same conformance suite (storetest) as the file
// adapter.
//
// Every revision is kept as the record line a file store would write for
// it (FORMAT.md's records, built by the writer path every adapter
// shares): a full record, or a delta holding what
// changed since the previous revision, so that an append costs what
// changed and a long session holds about one snapshot per chain, not one
// per revision. Reads rebuild a revision from its chain (the latest full
// record before it and the deltas after it) and decode it afresh, so a
// caller never shares memory with the store. A summary.Index is fed on
// every create, append and delete, and on every acquisition, release and
// loss of a lease, and answers List and Watch; List fills in lease status
// when a page is read.
//
// Part content at or above Options.BlobThreshold (16 KiB by default: long
// texts and tool outputs, images) is kept out of line: once per session,
// under its SHA-256, however often it is attached, the records holding
// its reference; so are the pages of a long conversation's full records
// (its older messages, a run per page). Load, LoadRevision and History
// give the content back in place; LoadWith with WithoutContent leaves the
// references, and an append of such a snapshot keeps them. DiskUsage
// reports the bytes of the records (LogBytes) and of the content and
// pages (BlobBytes); ReadBlob reads one.
//
// Leases exclude holders within this process (there is no other). Nothing
// expires them, so AcquireOptions.HeartbeatInterval is ignored and
// Heartbeat and Append only record the time; Supersede simulates a holder
// that lost its lease, for tests of recovery paths.
//
// # Usage
//
//	store := memstore.New(memstore.Options{})
//	defer store.Close()
//
//	w, err := store.Create(ctx, snap, sessionstore.AcquireOptions{Label: "agent"})
//	rev, err := w.Append(ctx, 1, next) // revision 2
//	err = w.Release(ctx)
//
//	rec, err := store.Load(ctx, snap.ID)
//	s, err := rec.Session()
//
// Nothing is durable: Close, or the end of the process, loses everything.
package memstore
