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
// ApplyChain apply, a delta between two snapshots on their raw JSON.
// Tracker (tracker.go) is the writers' side: it keeps the latest snapshot
// as pieces and builds the next record from the pieces that changed — a
// delta when the chain policy allows, else a full record, its older
// messages in pages (pages.go, format 4) when it has a PageStore:
//
//	line, err := tracker.Next(meta, members, maxRecord, versions)
//	… append line durably …
//
// Reader (reader.go) is the readers' side: it reads records from any
// source of lines, enforces the sequence rules (Seq, seq.go), and with
// Snapshots rebuilds each revision's stored snapshot; ExpandPages gives the
// conversation a snapshot's pages stand for.
//
// The writers' side of those rules is next.go: First and Next make the
// envelope of the record every adapter's append writes, after checking
// it against the session's latest (a stale view, a newer schema, a later
// holder), so that what a writer makes is what a reader accepts. The
// record cap's rules are cap.go (Cap, SessionCap):
//
//	m, err := record.Next(id, latest, expected, gen, now) // ErrConflict, ErrSchemaTooNew, ErrLeaseLost
package record
