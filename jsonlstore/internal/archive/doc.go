// Package archive owns a session's archive/ directory (FORMAT.md
// "Compaction and archive/"): the manifest's codec, segment names, the
// capped segment reader, the segment writer and its read-back check, and
// what crashed compactions leave behind.
//
// Archives hold revisions trimmed from the log by compaction:
//
//	<session>/archive/
//	  manifest.json                              the segments, framed with a checksum
//	  00000000000000000001-00000000000000000900.zst
//
// A segment is the zstd compression of the trimmed records' lines, copied
// byte for byte from the log (so each keeps its own CRC). The manifest
// gives each segment's revision range, record count, sizes and the CRC-32C
// of its uncompressed bytes; it is replaced atomically and durably after
// the segment is written, synced and verified, and before the log is
// replaced.
//
// The log is authoritative for every revision from its first record on. A
// segment that reaches into the log's range was left by a crash between
// the two steps: readers ignore it and the next compaction reclaims it.
//
// It must never decide when to compact, never touch the log, and never
// import a room above it (logfile, catalog, listing, offline, compact or
// jsonlstore itself): it is given a file system and a session, and reads
// or writes archive/ only.
package archive
