package jsonlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// decodeRecord turns r, a verified record whose snapshot (its payload, or
// what its delta chain rebuilds) is snap, into a contract Record. The
// pages its messages array references are read from the session's blobs
// through c, and so is the content its parts keep out of line unless c is
// light (a load without the content: the parts keep their references);
// each blob is checked against its SHA-256.
func decodeRecord(id session.SessionID, r *rawRecord, snap []byte, c *blobCache) (sessionstore.Record, error) {
	snap, err := record.ExpandPages(snap, c.page)
	if err != nil {
		return sessionstore.Record{}, pageAt(id, r, err)
	}
	decoded, err := decodeSnapshot(id, r, snap)
	if err != nil {
		return sessionstore.Record{}, err
	}
	if !c.light {
		if err := decoded.Messages.Resolve(c.fetch); err != nil {
			return sessionstore.Record{}, blobAt(r, err)
		}
	}
	return sessionstore.Record{ID: id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: decoded}, nil
}

// decodeSnapshot decodes snap, the snapshot of record r, with its pages
// expanded (or left out) and its content left as references.
func decodeSnapshot(id session.SessionID, r *rawRecord, snap []byte) (sessnap.Snapshot, error) {
	decoded, err := sessnap.Unmarshal(snap)
	if err != nil {
		return sessnap.Snapshot{}, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload is not a snapshot: %w", err)}
	}
	if decoded.ID != id {
		return sessnap.Snapshot{}, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload belongs to session %q", decoded.ID)}
	}
	return decoded, nil
}

// pageAt locates a failure to expand a record's pages at r: a damaged or
// missing page blob (blobAt), or a page or reference that is malformed.
func pageAt(id session.SessionID, r *rawRecord, err error) error {
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) {
		return blobAt(r, err)
	}
	return &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev, Err: err}
}

// blobCache holds the blob contents one read has fetched, so that a
// History of many revisions reads each blob (and page) once; it keeps at
// most blobCacheBytes (then starts again). A light cache reads pages only:
// the parts' content stays out of line.
type blobCache struct {
	s     *Store
	id    session.SessionID
	light bool
	m     map[string][]byte
	size  int64
}

const blobCacheBytes = 256 << 20

// newBlobCache returns a cache for reads with the content.
func (s *Store) newBlobCache(id session.SessionID) *blobCache {
	return &blobCache{s: s, id: id, m: map[string][]byte{}}
}

// newPageCache returns a cache for reads without the content (light).
func (s *Store) newPageCache(id session.SessionID) *blobCache {
	return &blobCache{s: s, id: id, light: true, m: map[string][]byte{}}
}

// cacheFor returns the cache for a read with the content, or, light,
// without it.
func (s *Store) cacheFor(id session.SessionID, light bool) *blobCache {
	if light {
		return s.newPageCache(id)
	}
	return s.newBlobCache(id)
}

// withoutContent returns a light cache sharing c's blobs.
func (c *blobCache) withoutContent() *blobCache {
	l := *c
	l.light = true
	return &l
}

func (c *blobCache) page(p record.PageRef) ([]byte, error) {
	return c.fetch(session.ContentRef{SHA256: p.SHA256, Size: p.Size})
}

func (c *blobCache) fetch(ref session.ContentRef) ([]byte, error) {
	if b, ok := c.m[ref.SHA256]; ok && int64(len(b)) == ref.Size {
		return b, nil
	}
	b, err := c.s.readBlob(c.id, ref)
	if err != nil {
		return nil, err
	}
	if c.size+int64(len(b)) > blobCacheBytes {
		clear(c.m)
		c.size = 0
	}
	c.m[ref.SHA256] = b
	c.size += int64(len(b))
	return b, nil
}

// loadLatest reads the view's latest revision: its last record and the
// chain that rebuilds it, read backwards from the end, with its content
// (or, light, without what is kept out of line).
func (s *Store) loadLatest(id session.SessionID, v *view, light bool) (*rawRecord, sessionstore.Record, error) {
	last, _, err := s.latest(id, v)
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	snap, err := s.snapshotOf(id, v, last)
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	rec, err := decodeRecord(id, last, snap, s.cacheFor(id, light))
	return last, rec, err
}

// Load returns the latest revision, read from the end of the log: its cost
// is one record, or for a delta its chain (bounded by the snapshot's size),
// whatever the length of the history.
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	return s.LoadWith(ctx, id, sessionstore.LoadOptions{})
}

var _ sessionstore.ContentLoader = (*Store)(nil)

// LoadWith implements sessionstore.ContentLoader: revision opts.Revision
// (the latest for 0), read as Load or LoadRevision read it, with the
// content kept out of line (blobs) or, with WithoutContent, without it:
// then no blob is read.
func (s *Store) LoadWith(ctx context.Context, id session.SessionID, opts sessionstore.LoadOptions) (sessionstore.Record, error) {
	if opts.Revision > 0 {
		return s.loadRevision(ctx, id, opts.Revision, opts.WithoutContent)
	}
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *view) error {
		var err error
		_, rec, err = s.loadLatest(id, v, opts.WithoutContent)
		return err
	})
	return rec, err
}

// LoadRevision returns revision rev (archived ones included). The latest
// is read as Load reads it; an older one by reading forwards to it from
// the log's start (or the archives', for an archived one), keeping the
// snapshot as pieces on the way (record.Snapshots), so the cost is
// reading the records before it, not rebuilding each. A revision a repair
// set aside is a *sessionstore.GapError.
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
	c := s.cacheFor(id, light)
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *view) error {
		last, _, err := s.latest(id, v)
		if err != nil {
			return err
		}
		if rev == 0 || rev > last.Through() {
			return fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, last.Through())
		}
		if rev >= last.Rev {
			_, rec, err = s.loadLatest(id, v, light)
			return err
		}
		// Read forwards to rev. In the log, past damage that rev does not
		// depend on (a salvaging reader): a revision is readable when its
		// own chain is.
		var h interface {
			Next() bool
			Record() *rawRecord
			Err() error
		}
		var rd *record.Reader
		if first, ok := firstRevOf(v); ok && rev >= first {
			rd = v.reader(record.Resumed())
			rd.Salvage = true
			h = rd
		} else {
			hs := s.scanHistory(id, v)
			defer hs.Close()
			h = hs
		}
		snaps := record.NewSnapshots(id, v.maxPayload)
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
			if r.Kind == KindGap {
				return gapError(id, r)
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

// blobAt locates a blob's corruption at r, the record that references it:
// the error names the record's file, offset and revision, and the blob.
func blobAt(r *rawRecord, err error) error {
	var ce *sessionstore.CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	return &sessionstore.CorruptionError{ID: ce.ID, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
		Err: fmt.Errorf("%s: %w", ce.Path, ce.Err)}
}
