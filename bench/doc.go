// Command sessbench compares sessionstore's jsonlstore with a raw
// O_APPEND+fdatasync baseline, SQLite (modernc.org/sqlite, WAL,
// synchronous=FULL) and bbolt on the workloads of DESIGN section 11, all
// in one run, and prints Markdown tables of the results with ratios.
//
//	go run .                 # the full run (several minutes)
//	go run . -quick          # small counts: under two minutes
//	go run . -only W1,W3     # some workloads
//	go run . -out results.md # also write the tables to a file
//
// Systems take turns within each workload (the order rotating every
// round), so that the noise of a shared machine hits all of them alike;
// the ratios in one run are what to compare across machines.
package main
