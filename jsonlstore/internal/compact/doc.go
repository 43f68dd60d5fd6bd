// Package compact owns compaction (FORMAT.md "Compaction and archive/"):
// which revisions a policy trims, streaming them into a new archive
// segment, replacing the log with one that starts at the first kept
// revision under the writer that holds the lease, the dry run that reports
// what a compaction would do, what crashed compactions left in archive/,
// and the writing of a whole new log beside the old one (which repair's
// salvage uses too).
//
// Compaction trims a session's old revisions into a zstd archive segment
// and replaces the log with one that starts at the first kept revision.
// It runs under the session's lease. The steps, and what a crash after
// each leaves:
//
//  0. Read the manifest and note what crashed compactions left in
//     archive/ (segments the manifest does not list, listed segments that
//     reach into the log, temporary files).
//  1. Stream the trimmed records' lines (verified) into
//     archive/.segment-*.tmp through zstd; fsync. Crash: a temp file,
//     ignored and reclaimed.
//  2. Remove the leftovers of step 0 (not synced: a removal that does not
//     survive a crash leaves a leftover to reclaim again). Verify the temp
//     segment by decompressing it; rename it to its final name. Crash: a
//     segment the manifest does not list, ignored and reclaimed.
//  3. Write the manifest listing the segment (and no longer listing the
//     leftovers): temp, fsync, rename, fsync archive/. That one directory
//     sync also makes the segment's name (and the removals) durable, before
//     the log can be replaced. Crash: a listed segment that overlaps the
//     log, which is still authoritative for those revisions: readers
//     ignore the segment, the next compaction reclaims it.
//  4. Copy the kept records byte for byte into .log.jsonl.compact-*.tmp,
//     fsync, rename over log.jsonl, fsync the session directory. Crash
//     before the rename is durable: the old log (all revisions) and an
//     overlapping segment; after: the new log and the segment, together
//     holding every revision exactly once.
//
// The session directory's sync in step 4 also makes archive/ itself
// durable when the first compaction created it (its creation is synced at
// once, too, so that an unkind crash cannot keep the new log and lose the
// directory). When nothing is trimmed, the leftovers are reclaimed
// durably: the files removed, then the manifest rewritten (temp, fsync,
// rename, fsync archive/) or, when it lists none of them, archive/ synced.
//
// Every sync above is needed: TestCompactSyncMutation (package jsonlstore)
// silences each in turn and finds a crash that loses or resurrects
// something.
//
// Revision numbers never change, and every byte of every record is kept.
//
// The writer that holds the lease is the facade's (package jsonlstore):
// compaction reaches it through Holder, an interface this package defines
// and the facade implements, and takes no lease of its own. It must never
// import the facade or the offline tools, take or release a lease, or
// write a log other than by replacing it whole under its holder; the
// archive's files are archive's, the log's reading logfile's.
package compact
