package jsonlstore

import (
	"context"
	"iter"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/create"
	"github.com/sessionstore/sessionstore/session"
)

// IDs returns the ID of every session directory under the root, in ID
// order, sessions whose logs are damaged included (List leaves those
// out). Errors: ErrClosed, I/O errors.
func (s *Store) IDs(ctx context.Context) ([]session.SessionID, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	ids, err := s.sessionIDs()
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// Import creates session id from its record lines, copied verbatim: the
// lines (each with its newline, as RecordLines yields them) must be
// revisions 1, 2, … of session id, and each must pass the checks History
// makes — the store's own reader checks framing,
// checksum and the sequence rules, each delta is applied to the revision
// before it, and each payload must decode to a snapshot of session id. It
// is how a session is copied into this store from another store of the
// same record format (another directory, or a database: pgstore).
//
// The session is created as Create creates one: its log is written into
// a temporary directory under its lease and synced, then the directory is
// renamed into place without replacing anything and the root is synced;
// a session whose records fail a check is never published. It is left
// with a free lease whose generation is above every generation in the
// records, and a summary. Lines are read up to MaxReadRecordBytes,
// whatever the store's own cap, and the session's settings.json records
// the larger of the store's cap and its largest record (payload or
// snapshot), so that every reader reads it and its next holder can go on
// from its records.
//
// The content the records reference (their blobs) comes from blobs, once
// per content, checked against its reference's size and SHA-256, and is
// written into the new session's blobs/ (compressed where that pays) and
// synced before the session is published. A reference blobs cannot
// satisfy (nil blobs, content it lacks or gives wrong) is corruption at
// the first record that holds it: nothing is created.
//
// Import returns the number of records. Errors: ErrInvalidID, ErrClosed,
// ErrExists, a *sessionstore.CorruptionError for a line that fails its
// checks or a blob the source lacks (nothing is created), a
// *sessionstore.NewerRecordError for a record of a newer program, a
// *sessionstore.GapError when the last record is a gap, lines' and blobs'
// own errors, I/O errors. As with Create, on error the session either does
// not exist or exists whole.
func (s *Store) Import(ctx context.Context, id session.SessionID, lines iter.Seq2[[]byte, error], blobs sessionstore.BlobSource) (n int, err error) {
	if err := s.check(ctx, id); err != nil {
		return 0, err
	}
	return create.Import(ctx, s.root, id, s.takeNew, s.leaseOptions(sessionstore.AcquireOptions{Label: "import"}, 0), lines, blobs)
}
