package jsonlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// decodeRecord turns r, a verified record whose snapshot (its payload, or
// what its delta chain rebuilds) is snap, into a contract Record. The
// pages its messages array references are read from the session's blobs
// through c, and so is the content its parts keep out of line unless c is
// light (a load without the content: the parts keep their references);
// each blob is checked against its SHA-256.
func decodeRecord(id session.SessionID, r *record.Rec, snap []byte, c *blobfile.Cache) (sessionstore.Record, error) {
	if record.MayHavePages(snap) {
		// The pages are read (on every core) before they are expanded.
		c.PrefetchPages(snap)()
	}
	snap, err := record.ExpandPages(snap, c.Page)
	if err != nil {
		return sessionstore.Record{}, logfile.PageAt(id, r, err)
	}
	if !c.Light() {
		// The blobs are read (on every core) while the snapshot decodes.
		defer c.Prefetch(snap)()
	}
	decoded, err := logfile.DecodeSnapshot(id, r, snap)
	if err != nil {
		return sessionstore.Record{}, err
	}
	if !c.Light() {
		c.Wait()
		if err := resolveShared(decoded.Messages, c.Fetch); err != nil {
			return sessionstore.Record{}, logfile.BlobAt(r, err)
		}
	}
	return sessionstore.Record{ID: id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: decoded}, nil
}

// loadLatest reads the view's latest revision: its last record and the
// chain that rebuilds it, read backwards from the end, with its content
// (or, light, without what is kept out of line).
func (s *Store) loadLatest(id session.SessionID, v *logfile.View, light bool) (*record.Rec, sessionstore.Record, error) {
	last, snap, err := logfile.LatestSnapshot(s.fs, id, v)
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	c := blobfile.CacheFor(s.fs, id, light)
	defer c.Close()
	rec, err := decodeRecord(id, last, snap, c)
	return last, rec, err
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
	if rev == 0 {
		if err := s.check(ctx, id); err != nil {
			return sessionstore.Record{}, err
		}
		return sessionstore.Record{}, fmt.Errorf("%w: session %s revision 0", sessionstore.ErrNotFound, id)
	}
	return s.loadRevision(ctx, id, rev, false)
}

func (s *Store) loadRevision(ctx context.Context, id session.SessionID, rev uint64, light bool) (sessionstore.Record, error) {
	c := blobfile.CacheFor(s.fs, id, light)
	defer c.Close()
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *logfile.View) error {
		last, _, err := logfile.Latest(s.fs, id, v)
		var ne *sessionstore.NewerRecordError
		switch {
		case errors.As(err, &ne) && last != nil:
			// The log ends with a newer program's record: the revisions
			// before it are read forwards, as History reads them (the
			// reader stops at that record, with ne, for any after it).
			if last.Rev > 0 && rev >= last.Rev {
				return err
			}
		case err != nil:
			return err
		case rev > last.Through():
			return fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, last.Through())
		case rev >= last.Rev:
			_, rec, err = s.loadLatest(id, v, light)
			return err
		}
		// Read forwards to rev. In the log, past damage that rev does not
		// depend on (a salvaging reader): a revision is readable when its
		// own chain is.
		var h interface {
			Next() bool
			Record() *record.Rec
			Err() error
		}
		var rd *record.Reader
		if first, ok := logfile.FirstRev(v); ok && rev >= first {
			rd = v.Reader(record.Resumed())
			rd.Salvage = true
			h = rd
		} else {
			hs := logfile.NewScan(s.fs, id, v)
			defer hs.Close()
			h = hs
		}
		snaps := record.NewSnapshots(id, v.MaxPayload)
		for h.Next() {
			r := h.Record()
			if rd != nil && rd.Damage() != nil {
				if !rd.Accepted() {
					continue // a repeated or misplaced record: not part of the sequence
				}
				if r.Rev > rev {
					return rd.Damage() // rev is among the records the damage took
				}
				snaps.Lose(rd.Damage())
			}
			if err := snaps.Add(r); err != nil {
				return err
			}
			if r.Through() < rev {
				continue
			}
			if r.Kind == record.KindGap {
				return logfile.GapError(id, r)
			}
			rec, err = decodeRecord(id, r, snaps.Bytes(), c)
			return err
		}
		if err := h.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w: session %s revision %d", sessionstore.ErrNotFound, id, rev)
	})
	return rec, err
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
