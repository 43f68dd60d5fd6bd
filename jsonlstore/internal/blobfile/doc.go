// Package blobfile owns a session's blobs/ directory (FORMAT.md
// "log.jsonl", blobs): the names of blob files, the writer that puts a
// holder's new blobs and makes them durable before the record that
// references them, the check of references a record brings, the one rule
// for which file is a blob and what reading one may cost (the reads of a
// reader that keeps no content, a Peeker's, included), the cache that
// reads a session's blobs once for a load or a history, and the deferred
// sync of a session being created.
//
// Blobs are part content kept out of line, content-addressed, in the
// session's own directory (so `cp -r` of a session directory copies
// everything it needs):
//
//	<session>/blobs/<sha256 hex>        the content, as is
//	<session>/blobs/<sha256 hex>.zst    the content, zstd-compressed (when that saves an eighth)
//
// The name is the SHA-256 of the content (uncompressed). A blob is written
// under a temporary name (.blob-<random>.tmp), synced, and renamed to its
// name; the directory is synced before any record that references the
// blob is written. So a committed record's blobs are durable, a blob file
// under its name is whole, and a crash leaves at worst a temporary file (a
// holder sweeps it) or a blob no record references (compaction or repair
// removes it; a reader never does). The same content attached twice is
// the same name: it is stored once.
//
// The rules of blobs themselves (hashes, the threshold, externalising,
// checks of content against a reference) are internal/blob's; blobfile
// applies them to files. It must never read or write a log, a summary, a
// catalog or a lease, nor decide when blobs are collected: it stores,
// finds and checks blob files, for the rooms above it.
package blobfile
