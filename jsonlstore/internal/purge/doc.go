// Package purge owns the redaction of what a session already stores
// (`sessions redact`, the facade's Store.Redact): it rewrites the
// session's whole history — every revision of the log and the archives,
// the blobs and pages they reference — with the secrets a redact.Redactor
// finds replaced by placeholders, and removes the copies that would
// otherwise keep them: the old blobs and pages, the archive segments,
// summary.json, and the secrets in forensic copies.
//
// It runs under the session's lease, reached through Holder (the facade's
// writer, whose mutex is held and lease fenced for the whole run), and
// reuses compaction's machinery (package compact) to replace the log and
// to find and reclaim archive leftovers. The steps, and what a crash after
// each leaves:
//
//  1. Read the whole history forwards (archives, then the log), rebuild
//     each revision's stored snapshot, redact it (blobs and pages whose
//     content changes get new ones, under their new hashes), and write
//     each revision as a record of the same revision number, generation,
//     time and kind — a delta is the delta between the two redacted
//     snapshots, record.Diff, so the new chain rebuilds exactly — into a
//     new log beside the old one (compact.WriteLog). The new blobs are
//     synced, and blobs/ with them, before the new log is renamed. Crash:
//     the old log, untouched; new blobs nothing references (torn blobs,
//     which the next collection removes) and a temporary log (the next
//     holder's sweep removes it).
//  2. Rename the new log over log.jsonl and sync the session directory
//     (compact.PublishLog). This is the one step that switches histories:
//     before it the old history is the session's, after it the new one,
//     never a mix. The new log holds every revision from 1 on: the old
//     archive segments now reach into the log, so every reader ignores
//     them (FORMAT.md, archive/).
//  3. Reclaim the old segments (compact's leftovers: files removed, the
//     manifest rewritten, archive/ synced), remove summary.json (written
//     for the old log, ignored by readers, and holding the old title),
//     rewrite each forensic copy that holds a secret with the secret
//     replaced and the blob and page references it holds renamed to the
//     new ones (temporary file, fsync, rename, fsync forensic/), and
//     collect the blobs nothing references (the old ones with secrets).
//     Crash: the new history, with some old copies left; running redact
//     again removes them (it does each of this step's things whether or
//     not the history needed rewriting).
//
// When no revision holds a secret, step 1 writes nothing and step 2 is
// skipped; step 3 still runs.
//
// The archived revisions come back into the log: a later compaction
// archives them again. The rewritten records keep their revision
// numbers, generations and times, and their kinds (a delta whose redacted
// form is no smaller than its snapshot becomes a full record, which
// readers and resumed writers accept anywhere in a chain).
//
// What this package does not do, the facade does after the lease is
// released: rewrite the listing catalog and the search index as new
// files, so that no row or page of the old ones survives.
package purge
