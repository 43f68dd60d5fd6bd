// Package memstore is the in-memory adapter of the sessionstore contract:
// for tests, and for ephemeral agents whose sessions need not outlive the
// process. It passes the same conformance suite (storetest) as the file
// adapter.
//
// Every revision is kept as its sessnap encoding, produced by
// sessionstore.EncodeSnapshot (the validation every adapter runs), and
// decoded afresh on every read, so a caller never shares memory with the
// store. A summary.Index is fed on every create, append and delete, and
// on every acquisition, release and loss of a lease, and answers List and
// Watch; List fills in lease status when a page is read.
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
