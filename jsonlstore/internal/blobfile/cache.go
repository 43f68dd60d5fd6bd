package blobfile

import (
	"bytes"
	"maps"
	"sync"

	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
)

// Cache holds the blob contents one read has fetched, so that a
// History of many revisions reads each blob (and page) once; it keeps at
// most blobCacheBytes (then starts again). A light cache reads pages only:
// the parts' content stays out of line.
type Cache struct {
	light bool
	*shared
}

// shared is a blobCache's blobs, shared by its light view.
type shared struct {
	fs    vfs.FS
	id    session.SessionID
	dir   *DirReader // opened at the first fetch
	tried bool
	// unlisted: the directory is opened without listing it (a read of
	// a few blobs, NewTailCache).
	unlisted bool

	mu       sync.Mutex // guards m and size while a prefetch runs
	m        map[string][]byte
	size     int64
	inflight sync.WaitGroup
}

const cacheBytes = 256 << 20

// NewCache returns a cache for reads with the content. Close it.
func NewCache(fsys vfs.FS, id session.SessionID) *Cache {
	return &Cache{shared: &shared{fs: fsys, id: id, m: map[string][]byte{}}}
}

// NewTailCache returns a cache for a read of a few blobs with the
// content (what was appended to a session since some revision): it
// opens blobs/ without listing it, so the read costs the blobs it reads,
// not one entry of every blob the session has (a listing is worth its
// cost for a read of a whole session, whose blobs are most of those
// listed). Close it.
func NewTailCache(fsys vfs.FS, id session.SessionID) *Cache {
	return &Cache{shared: &shared{fs: fsys, id: id, m: map[string][]byte{}, unlisted: true}}
}

// NewPageCache returns a cache for reads without the content (light).
// Close it.
func NewPageCache(fsys vfs.FS, id session.SessionID) *Cache {
	return &Cache{light: true, shared: &shared{fs: fsys, id: id, m: map[string][]byte{}}}
}

// CacheFor returns the cache for a read with the content, or, light,
// without it. Close it.
func CacheFor(fsys vfs.FS, id session.SessionID, light bool) *Cache {
	if light {
		return NewPageCache(fsys, id)
	}
	return NewCache(fsys, id)
}

// WithoutContent returns a light cache sharing c's blobs (and c's
// directory: close c, not it).
func (c *Cache) WithoutContent() *Cache {
	return &Cache{light: true, shared: c.shared}
}

// Close releases the blob directory the cache holds open.
func (c *Cache) Close() {
	if c.dir != nil {
		c.dir.Close()
		c.dir = nil
	}
}

// Page returns the content of page p (a blob like any other).
func (c *Cache) Page(p record.PageRef) ([]byte, error) {
	return c.Fetch(session.ContentRef{SHA256: p.SHA256, Size: p.Size})
}

// Fetch returns the content of ref, read once and kept while the cache
// holds less than its bound.
func (c *Cache) Fetch(ref session.ContentRef) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.m[ref.SHA256]
	c.mu.Unlock()
	if ok && int64(len(b)) == ref.Size {
		return b, nil
	}
	c.open()
	b, err := ReadVia(c.fs, c.dir, c.id, ref)
	if err != nil {
		return nil, err
	}
	c.Keep(ref.SHA256, b)
	return b, nil
}

func (c *Cache) open() {
	if !c.tried {
		c.tried = true
		if c.unlisted {
			c.dir = OpenDirUnlisted(c.fs, c.id)
		} else {
			c.dir = OpenDir(c.fs, c.id) // nil when it cannot: names are then resolved one by one
		}
	}
}

// Keep caches b, the content of hash, unless the cache is full (a
// Prefetch stops then) or, for a fetch, after emptying it.
func (c *Cache) Keep(hash string, b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.size+int64(len(b)) > cacheBytes {
		clear(c.m)
		c.size = 0
	}
	c.m[hash] = b
	c.size += int64(len(b))
	return true
}

// Wait waits for the prefetch under way, if any.
func (c *Cache) Wait() { c.inflight.Wait() }

// refPrefix and pageRefPrefix precede a blob's and a page's hash in a
// record (sessnap's part "blob" reference; record.EncodePage).
var (
	refPrefix     = []byte(`"sha256":"`)
	pageRefPrefix = []byte(`{"page":{"sha256":"`)
)

// ScanRefs calls fn with every hash b names after refPrefix, and whether
// it names a page.
func ScanRefs(b []byte, fn func(hash string, page bool)) {
	for {
		i := bytes.Index(b, refPrefix)
		if i < 0 {
			return
		}
		h := b[i+len(refPrefix):]
		if len(h) > 64 && h[64] == '"' && blob.ValidHash(string(h[:64])) {
			page := i+len(refPrefix) >= len(pageRefPrefix) && bytes.Equal(b[i+len(refPrefix)-len(pageRefPrefix):i+len(refPrefix)], pageRefPrefix)
			fn(string(h[:64]), page)
		}
		b = b[i+len(refPrefix):]
	}
}

// Light reports whether c is for a read without the content (its parts
// keep their references).
func (c *Cache) Light() bool { return c.light }

// Hold puts content, already checked against hash, into the cache.
func (c *Cache) Hold(hash string, content []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[hash] = content
}

// CopyTo copies the blobs the cache holds into dst.
func (c *Cache) CopyTo(dst map[string][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.Copy(dst, c.m)
}
