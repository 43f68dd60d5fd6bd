// Package searchhost is the seam between a directory store (package
// jsonlstore, the host) and the full-text search index it may be opened
// with (package searchindex, behind the public jsonlstore/fts): what the
// store gives the index (Host: its files, its sessions' logs read as
// records, the catalog's word on them) and what the index gives the
// store (Index: searching, its upkeep, and a Feed for each writer).
//
// It owns no file and no rule. It must never import the index's
// implementation, SQLite or anything that links it: the store imports
// this package, and a program that opens a store without a search index
// links nothing of search but it.
package searchhost
