// Command compact trims old revisions of sessions in a sessionstore file
// store (jsonlstore) into zstd archives, by policy:
//
//	compact [--keep-last N] [--keep-since D] [--wait D] [--dry-run] [--json] [--dir ROOT] [ID...]
//
//	compact --keep-last 100                  # every session: keep its last 100 revisions
//	compact --keep-since 168h s1 s2          # keep a week of s1 and s2
//	compact --keep-last 1 --dry-run --json   # what would be trimmed, as JSON
//
// A revision is kept when any rule keeps it; the latest revision always
// is. Trimmed revisions stay readable (History, LoadRevision, `sessions
// show --rev`): compaction moves them, byte for byte, into a verified
// archive before it replaces the log.
//
// Each session is compacted under its lease: a session another process
// holds is skipped (and reported as such) unless --wait gives the time to
// wait for it. --dry-run takes no lease and writes nothing.
//
// The store is --dir, else $SESSIONSTORE_DIR, else
// $XDG_DATA_HOME/sessionstore, else ~/.local/share/sessionstore. With no
// ID, every session of the store is compacted.
//
// On a terminal, a progress bar on stderr follows the work; otherwise only
// the report is printed: a table and totals (sessions compacted and
// skipped, revisions trimmed, log bytes before and after, archive bytes),
// or with --json the reports and their totals. The exit status is 0 when
// every session was compacted or skipped, 1 when one failed, 2 for a usage
// error. `sessions compact` is the same command (package
// internal/compactcmd holds both).
//
// The command is thin: flags, validation, then jsonlstore's Store.Compact
// per session, then printing. run is a function of (ctx, args, stdout,
// stderr) returning the exit status, so tests run it in-process as well as
// through the binary.
package main
