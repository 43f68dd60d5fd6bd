package logfile

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/session"
)

// Rebuild reads session id's whole history forwards (Scan) and rebuilds
// every revision's snapshot on the way: a delta needs its base, so every
// record is applied, also those a caller passes over. It stops when ctx
// is done. Close it when done.
type Rebuild struct {
	*Scan
	ctx   context.Context
	snaps *record.Snapshots
	blobs *blobfile.Cache // the session's content kept out of line, read once
	err   error
}

// NewRebuild starts a Rebuild of session id as v sees the log.
func NewRebuild(ctx context.Context, fsys vfs.FS, id session.SessionID, v *View) *Rebuild {
	return &Rebuild{Scan: NewScan(fsys, id, v), ctx: ctx,
		snaps: record.NewSnapshots(id, v.MaxPayload), blobs: blobfile.NewCache(fsys, id)}
}

// Next advances to the next record and applies it to the snapshot.
func (h *Rebuild) Next() bool {
	if h.err != nil || !h.Scan.Next() {
		return false
	}
	if h.err = h.ctx.Err(); h.err != nil {
		return false
	}
	h.err = h.snaps.Add(h.Record())
	return h.err == nil
}

// Snapshot returns the bytes of the current record's revision's snapshot
// (valid until Next).
func (h *Rebuild) Snapshot() []byte { return h.snaps.Bytes() }

// Blobs is the cache the rebuild reads the session's blobs through, for
// DecodeRecord (valid until Close).
func (h *Rebuild) Blobs() *blobfile.Cache { return h.blobs }

// Err returns what stopped the read: nil at the log's end.
func (h *Rebuild) Err() error {
	if h.err != nil {
		return h.err
	}
	return h.Scan.Err()
}

// Close closes the open segment and the content cache.
func (h *Rebuild) Close() {
	h.blobs.Close()
	h.Scan.Close()
}

// DecodeRecord turns r, a verified record whose snapshot (its payload, or
// what its delta chain rebuilds) is snap, into a contract Record. The
// pages its messages array references are read from the session's blobs
// through c, and so is the content its parts keep out of line unless c is
// light (a load without the content: the parts keep their references);
// each blob is checked against its SHA-256. The pages' messages are
// decoded where they lie (record.Unpage), never copied into one array.
func DecodeRecord(id session.SessionID, r *record.Rec, snap []byte, c *blobfile.Cache) (sessionstore.Record, error) {
	// The pages, and the blobs they and the snapshot reference, are read
	// on every core; the blobs go on being read while the snapshot
	// decodes.
	pages := c.PrefetchRecord(snap)
	defer c.Wait()
	pages()
	u, err := record.Unpage(snap, c.Page)
	if err != nil {
		return sessionstore.Record{}, PageAt(id, r, err)
	}
	decoded, err := DecodeUnpaged(id, r, u)
	if err != nil {
		return sessionstore.Record{}, err
	}
	if !c.Light() {
		c.Wait()
		if err := ResolveShared(decoded.Messages, c.Fetch); err != nil {
			return sessionstore.Record{}, BlobAt(r, err)
		}
	}
	return sessionstore.Record{ID: id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: decoded}, nil
}
