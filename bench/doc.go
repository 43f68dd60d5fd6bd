// Command sessbench compares sessionstore's jsonlstore (with delta
// records, and in W2 also with FullRecordsOnly) with a raw
// O_APPEND+fdatasync baseline, SQLite (modernc.org/sqlite, WAL,
// synchronous=FULL), bbolt and pgstore on the workloads BENCHMARKS.md
// describes, all in one run, and prints Markdown tables of the results with
// ratios.
//
//	go run .                 # the full run (several minutes)
//	go run . -quick          # small counts: under two minutes
//	go run . -only W1,W3     # some workloads
//	go run . -out results.md # also write the tables to a file
//	go run . -pg=false       # without the pgstore rows
//
// The pgstore rows (W1, W3, W4) run on a throwaway PostgreSQL cluster the
// run starts on loopback through internal/testing/pgtest, durable (fsync and
// synchronous_commit on), and stops at the end or on SIGINT/SIGTERM; when
// PostgreSQL cannot start, the run prints "pgstore rows skipped: <reason>"
// and goes on without them. PGSTORE_TEST_DSN names an existing server
// instead; the run refuses to measure one without fsync.
//
// Systems take turns within each workload (the order rotating every
// round), so that the noise of a shared machine hits all of them alike;
// the ratios in one run are what to compare across machines.
package main
