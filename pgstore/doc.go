// Package pgstore is the PostgreSQL adapter of the sessionstore contract,
// for agents on several machines that share one store. It passes the same
// conformance suite (storetest) as the file store, through
// github.com/jackc/pgx/v5.
//
// # Usage
//
//	if _, err := pgstore.Migrate(ctx, dsn); err != nil { … } // once, by a deploy step or `sessions migrate --schema`
//	store, err := pgstore.Open(ctx, "postgres://agent@db.internal/sessions", pgstore.Options{})
//	defer store.Close()
//
//	w, err := store.Create(ctx, snap, sessionstore.AcquireOptions{Label: "agent"})
//	rev, err := w.Append(ctx, 1, next) // revision 2, committed when it returns
//	err = w.Release(ctx)
//
// # Schema
//
// The schema is a sequence of SQL migrations embedded in the package
// (migrations/NNNN_name.sql), applied by Migrate, each in its own
// transaction, and recorded in pgstore_schema. Open refuses a database
// that is not at SchemaVersion: ErrSchemaOutdated (run Migrate), or
// ErrSchemaNewer (a newer program migrated it; this one neither reads nor
// writes it).
//
//	pgstore_sessions   one row per session: its existence, its lease
//	                   (generation, state, expires_at, holder identity)
//	                   and its record cap (schema version 4)
//	pgstore_records    (session_id, rev) → the record line, verbatim,
//	                   plus gen, time, kind, schema as indexed columns
//	pgstore_summaries  one row per session: the projection of its latest
//	                   record (summary.Summary JSON) and the columns List
//	                   filters and orders on
//	pgstore_blobs      (session_id, sha256) → part content kept out of
//	                   line, as it is, and its size (schema version 2)
//	pgstore_search_*   the full-text index: per-document tsvectors and
//	                   each session's indexed revision (schema version 3)
//
// Each record is stored as the exact bytes of its line in the file
// format (FORMAT.md), newline included, so that a
// session copies between a directory store and a database byte for byte
// (`sessions migrate`) and every reader checks the same checksum. Not
// jsonb, which reorders keys and drops duplicates, and not rebuilt from
// columns: timestamptz keeps microseconds, the format nanoseconds.
//
// Writers write the records the file store writes, through the same code
// (the writer path every adapter shares): a revision is a delta of what changed since the
// previous one (format 2) whenever the chain policy allows, else a full
// record, so an append costs what changed. A writer remembers the revision
// it stored last; a new holder resumes from the chain it finds at Acquire,
// so its first append can be a delta too. Load reads the latest full
// record and the deltas after it in one query and applies them in one
// pass: its cost stays bounded by about one and a half snapshots, however
// long the history. A record of a kind this program does not know stops
// the read (a *sessionstore.NewerRecordError naming its revision).
//
// The record cap is the session's, as in the file store: a session
// records the largest Options.MaxRecordBytes of the writers that created
// or acquired it (max_record_bytes; an import, at least its largest
// record; a fork, at least its source's), and a holder writes under the
// larger of its own cap and that one, so that it can go on from the
// records written under it. Every read takes any record the table holds
// up to sessionstore.MaxReadRecordBytes, whatever the reader's own cap:
// the database frames each record, so a reader's cap would protect
// nothing, and a valid record written under a larger cap is never
// reported as damage.
//
// # Content kept out of line
//
// Part content at or above Options.BlobThreshold (16 KiB by default: long
// texts and tool outputs, images, encrypted reasoning) goes into
// pgstore_blobs, once per session under its SHA-256, inserted ON CONFLICT
// DO NOTHING in the transaction of the first record that references it;
// the records hold references (format 4), so the same content attached in
// many revisions is one row, and a session's content may exceed the record
// cap many times over. It is stored as it is: PostgreSQL compresses large
// values itself (TOAST), and the server hashes a blob for Verify without
// sending it. Reads fetch the content a record references in one query
// per record (a History keeps it for the records after) and check it
// against the reference's size and SHA-256; content missing or damaged is
// a *sessionstore.CorruptionError at the record. LoadWith with
// WithoutContent reads none; an append of such a snapshot keeps the
// references, which must name content the session holds. A fork gets the
// content its revision references, copied by the server; blobs go with
// their session. DiskUsage reports them as BlobBytes, ReadBlob reads one.
// A long conversation's full records keep its older messages in pages
// (FORMAT.md), rows of pgstore_blobs too, so that every
// record stays within the record cap however long the conversation; every
// read expands them, a read without the content included.
//
// # Leases
//
// No kernel lock spans machines, so a lease is a row with a time to live
// on the database server's clock. Acquiring increments the generation and
// sets a random nonce in one transaction under the row's lock. The holder
// heartbeats by itself (a goroutine per writer, every
// Options.HeartbeatInterval, stopped by Release, Delete or Close); an
// append also extends the lease. A holder that stops heartbeating for
// LeaseTTL (crashed, partitioned, paused) loses the lease: readers see it
// stale and the next Acquire takes it over. Fencing: every append,
// heartbeat and delete locks the session row and checks generation,
// nonce and expiry in the transaction that writes, so a holder whose lease
// expired writes nothing and gets sessionstore.ErrLeaseLost, even if it
// wakes up before anyone took over.
//
// What is not guaranteed: a holder learns that it lost its lease only when
// it next touches the database, so work it does between appends (calling
// a model, running a tool) may overlap its successor's; only the records
// are fenced. Clock skew between machines does not matter for expiry (the
// server's clock decides) but record times come from the writer's clock,
// kept from going backwards along a session.
//
// # Tools
//
// Records yields a session's stored lines (checked, not decoded); Import
// creates a session from lines copied verbatim and the content they
// reference (from a sessionstore.BlobSource, checked), in one transaction;
// Export writes the same bytes as jsonlstore's Export of the same records;
// Verify checks every record, every referenced blob and the summary;
// ExpireLease ends a stuck lease.
// `sessions migrate` and the `sessions` commands given a postgres:// store
// are built on them.
//
// # Summaries and watch
//
// Every create, append and delete updates the session's summary row and
// sends NOTIFY pgstore_changes with the session ID, in its transaction, as
// does every acquisition and release of a lease and ExpireLease. List is
// one indexed query per page with package summary's keyset cursors. Watch
// listens on a dedicated connection, coalesces bursts, reads the changed
// summaries back with their leases, and reconnects and reloads everything
// when the connection breaks, so a watcher converges to the current state.
// A lease that expires notifies nobody: Watch reads each held lease again
// when it expects it to expire, so a dead holder's lease shows stale in
// the change feed at its expiry.
package pgstore
