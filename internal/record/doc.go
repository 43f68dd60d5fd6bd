// Package record is the log record codec shared by the adapters that store
// sessionstore's line format: jsonlstore writes records as the lines of
// log.jsonl, and any adapter that keeps records verbatim (so that they can
// be copied between stores byte for byte) stores the same bytes.
//
// A record is one line: a fixed, positional envelope, the payload verbatim,
// and a CRC-32C of every byte before the checksum. FORMAT.md at the
// repository root is the contract; this package is its one implementation.
// The same checksum suffix also frames small JSON files (Frame, Unframe).
//
// Format 2 adds delta records (delta.go): Diff computes, and Apply and
// ApplyChain apply, a delta between two snapshots on their raw JSON; Chain
// is the writers' policy of when to write one. An adapter writing records
// keeps a Chain:
//
//	line := chain.DeltaLine(m, payload, maxRecord) // nil: write in full
//	if line == nil {
//		line = record.Encode(m, payload)
//	}
//	… append line durably …
//	chain.Advance(kind, payload, len(line))
package record
