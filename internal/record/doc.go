// Package record is the log record codec shared by the adapters that store
// sessionstore's line format: jsonlstore writes records as the lines of
// log.jsonl, and any adapter that keeps records verbatim (so that they can
// be copied between stores byte for byte) stores the same bytes.
//
// A record is one line: a fixed, positional envelope, the payload verbatim,
// and a CRC-32C of every byte before the checksum. FORMAT.md at the
// repository root is the contract; this package is its one implementation.
// The same checksum suffix also frames small JSON files (Frame, Unframe).
package record
