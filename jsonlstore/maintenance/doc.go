// Package maintenance holds the options and reports of a directory store's
// maintenance operations (repair and salvage, compaction, backup, blob
// collection, retirement and the catalog's checks), and the store's
// sentinel errors (errors.go).
//
// It is a leaf: plain data, no behaviour beyond formatting, importing
// nothing of the store. The jsonlstore facade returns these types and
// exports these errors, and the rooms that do the work (one per artifact
// of FORMAT.md) fill and return them, so that a report or an error is
// defined once and never copied between layers.
package maintenance
