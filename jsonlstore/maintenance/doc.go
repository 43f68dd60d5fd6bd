// Package maintenance holds the options and reports of a directory store's
// maintenance operations: repair and salvage, compaction, backup, blob
// collection and the catalog's checks.
//
// It is a leaf: plain data, no behaviour beyond formatting, importing
// nothing of the store. The jsonlstore facade returns these types, and the
// internal packages that do the work (one per artifact of FORMAT.md) fill
// them, so that a report is defined once and never copied between layers.
package maintenance
