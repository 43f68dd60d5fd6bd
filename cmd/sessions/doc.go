// Command sessions is the everyday tool for a sessionstore store — a
// directory (jsonlstore) or a PostgreSQL database (pgstore): list, show
// and follow sessions, check and repair their logs, compact, back up and
// migrate them, free and delete them, and run a demonstration workload.
//
//	sessions [--dir DIR] COMMAND [ARGS] [FLAGS]
//
//	sessions ls --state running,awaiting     # a table of sessions
//	sessions show ID --rev 3                 # a snapshot, as JSON
//	sessions log ID                          # revisions: generation, time, kind, bytes
//	sessions lease ID                        # who holds it; what to do if stuck
//	sessions watch                           # a live table (Ctrl-C stops)
//	sessions verify                          # exit 0 sound, 1 corrupt, 2 error
//	sessions repair ID --truncate-at-corruption
//	sessions rm ID --wait 10s
//	sessions du                              # bytes per session
//	sessions export ID > history.jsonl
//	sessions backup /backups/today           # a consistent, verified copy
//	sessions compact --keep-last 100         # as the compact command
//	sessions demo                            # agents, a crash, a takeover
//
// The store is --dir (before or after the command), else
// $SESSIONSTORE_DIR, else $XDG_DATA_HOME/sessionstore, else
// ~/.local/share/sessionstore; a postgres:// URL names a database. Only
// demo creates a missing store. A session is named by its ID or a unique
// prefix of it, in either case.
//
// Errors go to stderr. Exit statuses are the same for every command: 0
// done, 1 an error kept the command from its work, 2 bad usage, 3
// corruption found (verify, repair, backup). Text from sessions (titles,
// labels) is printed with control characters escaped; on a terminal,
// tables fit its width and are colored unless NO_COLOR is set.
// Every subcommand has --help. Each is a function of (ctx, args, stdout,
// stderr) returning its exit status — flags, validation, one library call,
// printing — so tests run them in-process as well as through the binary.
package main
