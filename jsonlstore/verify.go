package jsonlstore

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Verify checks every record of the given sessions (all sessions when
// none is given), in the given order (ID order for all), archived ones
// included: each record's checksum and framing, the archive manifest and
// segment checksums, the sequence rules (revisions from 1 by exactly 1,
// generations and times never decreasing) exactly as History checks them,
// that each delta record applies to the previous revision's snapshot and
// rebuilds exactly the snapshot it names (checksums combined from its
// pieces: a delta costs what it changes, so a check is one pass over the
// log), that every full record's snapshot and the latest one decode and
// restore to a Session (VerifyWith's Deep does so for every revision), that
// every blob those reference exists and holds what its reference says,
// that the bytes
// after the last record are an uncommitted tail and not damage, and that a
// summary.json written for the log on disk agrees with it. A session whose
// log is missing or is not a regular file is a problem; one whose log or
// summary.json shares its file with another name (a hard link) gets a
// note.
//
// Verify is a reader: it takes no lease, modifies nothing, and is safe on
// a live store. Like every read it confirms an anomaly on a fresh view of
// the log before reporting it, so writers appending and new holders
// recovering while it runs cause no false alarm.
//
// Findings go into the report, with files relative to the store root
// ("ID/log.jsonl"). A session's Problems are corruption: a record that
// fails its checksum, framing or sequence checks while valid records
// follow it, a payload that does not decode or restore, a damaged tail
// that recovery would refuse to remove, a summary.json that disagrees with
// the log. Its Notes are no failure: an uncommitted tail (the next lease
// holder removes it), records from a newer schema, files in forensic/,
// parts this version cannot check. A session Verify cannot check (a
// permission or I/O error) goes into its Unreadable list, and Verify goes
// on with the others. The error is for what kept Verify from checking at
// all: a done context, a closed store, an invalid or unknown ID among ids
// (a session deleted while Verify lists all sessions is skipped), a root
// it cannot list.
func (s *Store) Verify(ctx context.Context, ids ...session.SessionID) (sessionstore.VerifyReport, error) {
	return s.VerifyWith(ctx, sessionstore.VerifyOptions{}, ids...)
}

// VerifyWith implements sessionstore.Verifier: Verify with options; with
// Deep, every revision's snapshot is decoded and restored and its blobs
// checked.
func (s *Store) VerifyWith(ctx context.Context, opts sessionstore.VerifyOptions, ids ...session.SessionID) (sessionstore.VerifyReport, error) {
	return s.verifier().Report(ctx, ids, opts.Deep, s.forSessions)
}
