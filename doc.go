// Package sessionstore is the store contract for AI-agent sessions: a
// durable, append-only history of snapshot revisions per session, an
// operation lease that says which process may drive a session, summaries
// for listing, full-text search, and change events for watching.
//
// A user meets a few types first:
//
//   - Store, the contract every adapter implements: memstore (in memory,
//     for tests and ephemeral agents), jsonlstore (a directory per session
//     on the local disk) and pgstore (PostgreSQL, for agents on several
//     machines sharing one store). The conformance suite in storetest
//     checks each against the same contract.
//   - Writer, the holder of one session's lease: the only party that
//     appends to it.
//   - Record, one stored revision, whose Session method restores it.
//   - AcquireOptions, the (optional) label of whoever takes a lease.
//   - The errors: sentinels for errors.Is (ErrConflict, ErrLeaseLost, …),
//     *LeaseHeldError saying who holds a lease, *CorruptionError saying
//     where a store is damaged.
//
// The snapshot a Writer appends is a sessnap.Snapshot of a
// session.Session; a listing is a summary.Query and its summary.Page.
//
// # The contract in brief
//
//   - A session's ID is chosen by the caller or minted with NewID (a ULID:
//     time-sortable, safe as a directory name); ValidateID says what is
//     allowed.
//   - To drive a session, take its lease: Acquire waits, TryAcquire fails
//     at once with a *LeaseHeldError. One holder at a time across all
//     processes; every acquisition gets a higher generation.
//   - The holder appends revisions: Append(expected, snapshot) returns the
//     next revision, durable when the call returns. A stale expected
//     revision is ErrConflict; a superseded holder gets ErrLeaseLost and
//     writes nothing; an I/O error poisons the writer (ErrWriterFailed).
//   - Anyone reads without a lease: Load (latest), LoadRevision, LoadWith
//     (without large content, for one), History, List (summaries, with
//     filter, order and cursor), Search, Watch (level-triggered changes),
//     Lease (who holds it), IDs (every session), DiskUsage, ReadBlob.
//   - Errors are sentinels for errors.Is; corruption is a *CorruptionError
//     with file and offset; an adapter's operational errors (I/O, the
//     database) are *OpError with the operation, session and file.
//
// # Optional capabilities
//
// What only the persistent adapters can do is an interface of its own,
// each used by a function that falls back on Store's methods where a
// store lacks it: Verifier (Verify), Exporter (Export), RecordLister
// (Records), HistoryCreator (CreateHistory), and SearchReindexer, whose
// index can be rebuilt.
//
// # Example
//
//	w, err := store.Create(ctx, snap, sessionstore.AcquireOptions{Label: "my-agent"})
//	rev, err := w.Append(ctx, 1, next)      // durable when it returns
//	err = w.Release(ctx)
//
//	w2, err := store.Acquire(ctx, id, sessionstore.AcquireOptions{})
//	rec, err := store.Load(ctx, id)          // rec.Revision == rev
//	s, err := rec.Session()                  // continue where w left off
package sessionstore
