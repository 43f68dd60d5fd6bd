// Package appender builds the records of a session's appends at a cost
// that follows what changed, for every adapter that writes the record
// format (internal/record): jsonlstore's log, pgstore's rows.
//
// An append costs what changed, not the session (FORMAT.md "Appending").
// The writer remembers the revision it stored last: the stored snapshot
// as pieces (record.Tracker), the messages it held (the caller's, shared:
// a message never changes once appended), and what it validated
// (sessnap.Checker). The next snapshot's messages that are the same
// memory as those — as sessnap.Of gives them, from a growing session — are
// recognised at no cost per message; only the messages after them are
// validated, encoded (their large content going out of line, as blobs)
// and appended, and the small head (every field but the conversation) is
// encoded and compared member by member. The delta record is built from
// those pieces and its checksum combined from theirs. A snapshot whose
// messages are not a continuation of the stored ones is encoded whole.
package appender
