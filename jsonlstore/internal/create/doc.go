// Package create builds a new session of a directory store (FORMAT.md
// "Layout", "log.jsonl"): its directory under a temporary name, held
// under its lease from the start (the creator is its first holder), its
// empty log and settings.json, its first history written through one
// buffer with its blobs and synced once after the last record, and the
// rename that publishes it whole. The facade's Create, CreateHistory,
// Fork and Import build sessions with it.
//
//	b, err := create.Start(ctx, root, id, take, opts, maxRecord)
//	last, latest, err := b.WriteHistory(ctx, app, blobs, first, next, now)
//	err = b.Publish() // else b.Abort(ctx)
//
// It must never make a session visible before every byte of it is
// durable, leave a half-built session under the session's own name, or
// take a lease other than through the facade's TakeLease (which owns the
// catalog's marks). How each record is encoded is internal/appender's;
// what a blob is, blobfile's.
package create
