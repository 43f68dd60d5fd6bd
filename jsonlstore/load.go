package jsonlstore

import (
	"context"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// loadLatest reads the view's latest revision (logfile.LoadLatest).
func (s *Store) loadLatest(id session.SessionID, v *logfile.View, light bool) (*record.Rec, sessionstore.Record, error) {
	return logfile.LoadLatest(s.fs, id, v, light)
}

// Load returns the latest revision, read from the end of the log: its cost
// is one record, or for a delta its chain (bounded by the snapshot's size),
// whatever the length of the history.
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	return s.LoadWith(ctx, id, sessionstore.LoadOptions{})
}

// LoadWith implements sessionstore.Store: revision opts.Revision
// (the latest for 0), read as Load or LoadRevision read it, with the
// content kept out of line (blobs) or, with WithoutContent, without it:
// then no blob is read.
func (s *Store) LoadWith(ctx context.Context, id session.SessionID, opts sessionstore.LoadOptions) (sessionstore.Record, error) {
	if opts.Revision > 0 {
		return s.loadRevision(ctx, id, opts.Revision, opts.WithoutContent)
	}
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *logfile.View) error {
		var err error
		_, rec, err = s.loadLatest(id, v, opts.WithoutContent)
		return err
	})
	return rec, err
}

// LoadRevision returns revision rev (archived ones included). The latest
// is read as Load reads it; an older one by reading forwards to it from
// the log's start (or the archives', for an archived one), keeping the
// snapshot as pieces on the way, so the cost is reading the records before
// it, not rebuilding each. A revision a repair set aside is a
// *sessionstore.GapError. When a newer program's record ends the log, the
// revisions before it read as History reads them, and that record's
// revision and any after it are its *sessionstore.NewerRecordError.
func (s *Store) LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	return adapter.LoadRevision(id, rev, func() error { return s.check(ctx, id) }, func() (sessionstore.Record, error) {
		return s.loadRevision(ctx, id, rev, false)
	})
}

// loadRevision reads revision rev (logfile.LoadRevision) once the
// store is open and id valid.
func (s *Store) loadRevision(ctx context.Context, id session.SessionID, rev uint64, light bool) (sessionstore.Record, error) {
	if err := s.check(ctx, id); err != nil {
		return sessionstore.Record{}, err
	}
	return logfile.LoadRevision(ctx, s.root, id, rev, light)
}

// ReadBlob implements sessionstore.Store: the content of ref from
// session id's blobs/, checked against its size and SHA-256. A blob the
// session does not have is ErrNotFound; one whose content is not what ref
// says is a *sessionstore.CorruptionError naming its file (ErrBlob).
func (s *Store) ReadBlob(ctx context.Context, id session.SessionID, ref session.ContentRef) ([]byte, error) {
	if err := s.checkSession(ctx, id); err != nil {
		return nil, err
	}
	_, ok, err := blobfile.Size(s.fs, blobfile.Dir(id), ref.SHA256)
	switch {
	case !blob.ValidHash(ref.SHA256) || err == nil && !ok:
		return nil, fmt.Errorf("%w: session %s: blob %s", sessionstore.ErrNotFound, id, ref.SHA256)
	case err != nil:
		return nil, layout.OpErr("session", id, fmt.Errorf("blob %s: %w", ref.SHA256, err))
	}
	return blobfile.Read(s.fs, id, ref)
}
