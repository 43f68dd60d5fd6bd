package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// decodeRecord turns r, a verified record whose snapshot (its payload, or
// what its delta chain rebuilds) is snap, into a contract Record. The
// pages its messages array references are read from the session's blobs
// through c, and so is the content its parts keep out of line unless c is
// light (a load without the content: the parts keep their references);
// each blob is checked against its SHA-256.
func decodeRecord(id session.SessionID, r *record.Rec, snap []byte, c *blobCache) (sessionstore.Record, error) {
	snap, err := record.ExpandPages(snap, c.page)
	if err != nil {
		return sessionstore.Record{}, logfile.PageAt(id, r, err)
	}
	if !c.light {
		// The blobs are read (on every core) while the snapshot decodes.
		defer c.prefetch(snap)()
	}
	decoded, err := logfile.DecodeSnapshot(id, r, snap)
	if err != nil {
		return sessionstore.Record{}, err
	}
	if !c.light {
		c.wait()
		if err := decoded.Messages.Resolve(c.fetch); err != nil {
			return sessionstore.Record{}, logfile.BlobAt(r, err)
		}
	}
	return sessionstore.Record{ID: id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: decoded}, nil
}

// blobCache holds the blob contents one read has fetched, so that a
// History of many revisions reads each blob (and page) once; it keeps at
// most blobCacheBytes (then starts again). A light cache reads pages only:
// the parts' content stays out of line.
type blobCache struct {
	light bool
	*blobShared
}

// blobShared is a blobCache's blobs, shared by its light view.
type blobShared struct {
	s     *Store
	id    session.SessionID
	dir   *blobDirReader // opened at the first fetch
	tried bool

	mu       sync.Mutex // guards m and size while a prefetch runs
	m        map[string][]byte
	size     int64
	inflight sync.WaitGroup
}

const blobCacheBytes = 256 << 20

// newBlobCache returns a cache for reads with the content. Close it.
func (s *Store) newBlobCache(id session.SessionID) *blobCache {
	return &blobCache{blobShared: &blobShared{s: s, id: id, m: map[string][]byte{}}}
}

// newPageCache returns a cache for reads without the content (light).
// Close it.
func (s *Store) newPageCache(id session.SessionID) *blobCache {
	return &blobCache{light: true, blobShared: &blobShared{s: s, id: id, m: map[string][]byte{}}}
}

// cacheFor returns the cache for a read with the content, or, light,
// without it. Close it.
func (s *Store) cacheFor(id session.SessionID, light bool) *blobCache {
	if light {
		return s.newPageCache(id)
	}
	return s.newBlobCache(id)
}

// withoutContent returns a light cache sharing c's blobs (and c's
// directory: close c, not it).
func (c *blobCache) withoutContent() *blobCache {
	return &blobCache{light: true, blobShared: c.blobShared}
}

// Close releases the blob directory the cache holds open.
func (c *blobCache) Close() {
	if c.dir != nil {
		c.dir.close()
		c.dir = nil
	}
}

func (c *blobCache) page(p record.PageRef) ([]byte, error) {
	return c.fetch(session.ContentRef{SHA256: p.SHA256, Size: p.Size})
}

func (c *blobCache) fetch(ref session.ContentRef) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.m[ref.SHA256]
	c.mu.Unlock()
	if ok && int64(len(b)) == ref.Size {
		return b, nil
	}
	c.open()
	b, err := c.s.readBlobVia(c.dir, c.id, ref)
	if err != nil {
		return nil, err
	}
	c.keep(ref.SHA256, b)
	return b, nil
}

func (c *blobCache) open() {
	if !c.tried {
		c.tried = true
		c.dir = c.s.openBlobDir(c.id) // nil when it cannot: names are then resolved one by one
	}
}

// keep caches b, the content of hash, unless the cache is full (a
// prefetch stops then) or, for a fetch, after emptying it.
func (c *blobCache) keep(hash string, b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.size+int64(len(b)) > blobCacheBytes {
		clear(c.m)
		c.size = 0
	}
	c.m[hash] = b
	c.size += int64(len(b))
	return true
}

// prefetch starts reading into c the blobs snap references (found in its
// bytes, scanRefs), on as many goroutines as there are cores, up to what
// the cache holds; wait waits for them, and so does the function it
// returns (for a caller that returns early). A blob that fails to read is
// left out: the fetch that needs it reads it again and reports why.
func (c *blobCache) prefetch(snap []byte) func() {
	var hashes []string
	seen := map[string]bool{}
	c.mu.Lock()
	scanRefs(snap, func(hash string, page bool) {
		if _, cached := c.m[hash]; !page && !cached && !seen[hash] {
			seen[hash] = true
			hashes = append(hashes, hash)
		}
	})
	c.mu.Unlock()
	if len(hashes) < 2 {
		return c.wait
	}
	c.open()
	next := make(chan string)
	var budget atomic.Int64
	budget.Store(blobCacheBytes - c.size)
	workers := min(runtime.GOMAXPROCS(0), len(hashes))
	c.inflight.Add(workers + 1)
	go func() {
		defer c.inflight.Done()
		defer close(next)
		for _, h := range hashes {
			if budget.Load() <= 0 {
				return
			}
			next <- h
		}
	}()
	for range workers {
		go func() {
			defer c.inflight.Done()
			for h := range next {
				b, err := c.s.readBlobVia(c.dir, c.id, session.ContentRef{SHA256: h, Size: sizeJustified})
				if err == nil && budget.Add(-int64(len(b))) >= 0 {
					c.mu.Lock()
					if _, ok := c.m[h]; !ok {
						c.m[h] = b
						c.size += int64(len(b))
					}
					c.mu.Unlock()
				}
			}
		}()
	}
	return c.wait
}

// wait waits for the prefetch under way, if any.
func (c *blobCache) wait() { c.inflight.Wait() }

// loadLatest reads the view's latest revision: its last record and the
// chain that rebuilds it, read backwards from the end, with its content
// (or, light, without what is kept out of line).
func (s *Store) loadLatest(id session.SessionID, v *logfile.View, light bool) (*record.Rec, sessionstore.Record, error) {
	last, snap, err := logfile.LatestSnapshot(s.fs, id, v)
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	c := s.cacheFor(id, light)
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
	c := s.cacheFor(id, light)
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
