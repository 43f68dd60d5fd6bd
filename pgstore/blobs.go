package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Part content at or above Options.BlobThreshold is kept out of line, in
// pgstore_blobs: one row per content and session, keyed by its SHA-256,
// inserted in the transaction of the first record that references it, so
// a committed record's content is there and a rolled-back append leaves
// none. The same content attached again is stored once: a row already
// there is kept when it holds the content (its size and the server's
// sha256() of it match) and replaced when it does not, so an append never
// acknowledges a record whose content the store cannot give back. The
// record lines hold the references, as a file store's do.

// blobsPath is the Path of a CorruptionError about stored content.
const blobsPath = "pgstore_blobs"

// blobPut returns the Put of a blob.Externalizer that inserts an
// append's new content in its transaction tx, skipping what known (content
// the caller inserted or checked in the session) and it inserted before,
// and the map of what it inserted or checked (the caller knows it once tx
// commits). Content whose row exists is checked by the server and the row
// replaced when damaged.
func blobPut(ctx context.Context, tx pgx.Tx, id session.SessionID, known map[string]int64) (put func(hash string, content []byte) error, added map[string]int64) {
	added = map[string]int64{}
	return func(hash string, content []byte) error {
		if _, ok := known[hash]; ok {
			return nil
		}
		if _, ok := added[hash]; ok {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO pgstore_blobs (session_id, sha256, size, content) VALUES ($1, $2, $3, $4)
			ON CONFLICT (session_id, sha256) DO UPDATE SET size = EXCLUDED.size, content = EXCLUDED.content
			WHERE pgstore_blobs.size <> EXCLUDED.size OR encode(sha256(pgstore_blobs.content), 'hex') <> pgstore_blobs.sha256`,
			string(id), hash, int64(len(content)), content)
		if err != nil {
			return fmt.Errorf("store blob %s: %w", hash, err)
		}
		added[hash] = int64(len(content))
		return nil
	}, added
}

// heldBlobs returns the content session id holds, hash → size (its hashes
// and sizes only), read in tx.
func heldBlobs(ctx context.Context, tx pgx.Tx, id session.SessionID) (map[string]int64, error) {
	rows, err := tx.Query(ctx, `SELECT sha256, size FROM pgstore_blobs WHERE session_id = $1`, string(id))
	if err != nil {
		return nil, err
	}
	held := map[string]int64{}
	var hash string
	var size int64
	_, err = pgx.ForEachRow(rows, []any{&hash, &size}, func() error {
		held[hash] = size
		return nil
	})
	return held, err
}

// copyBlobs copies into session to, in tx, the content of session from
// that refs name, and returns what it copied (hash → size). Content from
// lacks is corruption of from.
func copyBlobs(ctx context.Context, tx pgx.Tx, from, to session.SessionID, refs sessnap.Messages) (map[string]int64, error) {
	var want []string
	wanted := map[string]bool{}
	refs.Refs(func(ref session.ContentRef) {
		if !wanted[ref.SHA256] {
			wanted[ref.SHA256] = true
			want = append(want, ref.SHA256)
		}
	})
	copied := map[string]int64{}
	if len(want) == 0 {
		return copied, nil
	}
	rows, err := tx.Query(ctx, `INSERT INTO pgstore_blobs (session_id, sha256, size, content)
		SELECT $1, sha256, size, content FROM pgstore_blobs WHERE session_id = $2 AND sha256 = ANY($3)
		RETURNING sha256, size`, string(to), string(from), want)
	if err != nil {
		return nil, err
	}
	var hash string
	var size int64
	if _, err := pgx.ForEachRow(rows, []any{&hash, &size}, func() error {
		copied[hash] = size
		return nil
	}); err != nil {
		return nil, err
	}
	for _, h := range want {
		if _, ok := copied[h]; ok {
			continue
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgstore_sessions WHERE id = $1)`, string(from)).Scan(&exists); err != nil {
			return nil, err
		}
		if !exists {
			return nil, fmt.Errorf("%w: session %s: deleted while forking", sessionstore.ErrNotFound, from)
		}
		return nil, &sessionstore.CorruptionError{ID: from, Path: blobsPath, Err: fmt.Errorf("no content %s, which its records reference", h)}
	}
	return copied, nil
}

// blobCacheBytes bounds the content one read keeps for the records after
// the one it was fetched for.
const blobCacheBytes = 256 << 20

// blobReader reads the pages and content of the records one read yields
// (a Load, a History, an export): what a record needs and the read has not
// fetched yet comes in one query, and stays for the records after; each
// blob is checked against its reference once per read.
type blobReader struct {
	s       *Store
	q       querier // the pool, or the transaction of an import (which reads back the pages it inserted)
	id      session.SessionID
	cache   map[string][]byte
	checked map[string]bool
	size    int64
}

func (s *Store) newBlobReader(id session.SessionID) *blobReader {
	return s.blobReaderOn(s.pool, id)
}

func (s *Store) blobReaderOn(q querier, id session.SessionID) *blobReader {
	return &blobReader{s: s, q: q, id: id, cache: map[string][]byte{}, checked: map[string]bool{}}
}

// fetch brings the blobs of hashes that are not cached into the cache, in
// one query.
func (b *blobReader) fetch(ctx context.Context, hashes []string) error {
	var want []string
	for _, h := range hashes {
		if _, ok := b.cache[h]; !ok && !slices.Contains(want, h) {
			want = append(want, h)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if b.size > blobCacheBytes {
		clear(b.cache)
		clear(b.checked)
		b.size = 0
	}
	rows, err := b.q.Query(ctx, `SELECT sha256, content FROM pgstore_blobs WHERE session_id = $1 AND sha256 = ANY($2)`,
		string(b.id), want)
	if err != nil {
		return wrapErr("read content of", b.id, err)
	}
	var hash string
	var content []byte
	if _, err := pgx.ForEachRow(rows, []any{&hash, &content}, func() error {
		b.cache[hash] = content
		b.size += int64(len(content))
		content = nil // the next row's own
		return nil
	}); err != nil {
		return wrapErr("read content of", b.id, err)
	}
	return nil
}

// get returns the cached blob ref names, checked against it.
func (b *blobReader) get(ref session.ContentRef) ([]byte, error) {
	c, ok := b.cache[ref.SHA256]
	if !ok {
		return nil, fmt.Errorf("%w: %s", errNoContent, ref.SHA256)
	}
	if !b.checked[ref.SHA256] || int64(len(c)) != ref.Size {
		if err := blob.Check(ref, c); err != nil {
			return nil, fmt.Errorf("content %s: %w", ref.SHA256, err)
		}
		b.checked[ref.SHA256] = true
	}
	return c, nil
}

// decode turns record r, whose stored snapshot is payload, into a Record:
// its pages expanded (record.ExpandPages), and, unless light, the content
// its parts keep out of line read in. A blob that is missing or not what
// its reference says is a *sessionstore.CorruptionError at r (or
// ErrNotFound, when the session was deleted meanwhile).
func (b *blobReader) decode(ctx context.Context, r *record.Rec, payload []byte, light bool) (sessionstore.Record, error) {
	full, err := b.expand(ctx, r, payload)
	if err != nil {
		return sessionstore.Record{}, err
	}
	rec, err := decode(b.id, r, full)
	if err != nil || light {
		return rec, err
	}
	return rec, b.resolve(ctx, r, &rec.Snapshot)
}

// expand returns payload, record r's snapshot, with the page references of
// its messages array replaced by the messages they hold.
func (b *blobReader) expand(ctx context.Context, r *record.Rec, payload []byte) ([]byte, error) {
	if !record.MayHavePages(payload) {
		return payload, nil
	}
	var want []string
	if err := record.Pages(payload, func(p record.PageRef) { want = append(want, p.SHA256) }); err != nil {
		return nil, b.corrupt(ctx, r, err)
	}
	if err := b.fetch(ctx, want); err != nil {
		return nil, err
	}
	out, err := record.ExpandPages(payload, func(p record.PageRef) ([]byte, error) {
		return b.get(session.ContentRef{SHA256: p.SHA256, Size: p.Size})
	})
	if err != nil {
		return nil, b.corrupt(ctx, r, err)
	}
	return out, nil
}

// resolve fills in the content of snap, record r's snapshot.
func (b *blobReader) resolve(ctx context.Context, r *record.Rec, snap *sessnap.Snapshot) error {
	var want []string
	snap.Messages.Refs(func(ref session.ContentRef) { want = append(want, ref.SHA256) })
	if err := b.fetch(ctx, want); err != nil {
		return err
	}
	err := snap.Messages.Resolve(func(ref session.ContentRef) ([]byte, error) {
		c, err := b.get(ref)
		if err == nil && ref.Field == session.ContentData {
			c = bytes.Clone(c) // Resolve keeps the slice; a string is a copy already
		}
		return c, err
	})
	if err != nil {
		return b.corrupt(ctx, r, err)
	}
	return nil
}

// corrupt is the error of a blob that record r needs and cannot have.
func (b *blobReader) corrupt(ctx context.Context, r *record.Rec, err error) error {
	if errors.Is(err, errNoContent) && b.s.gone(ctx, b.id) {
		return fmt.Errorf("%w: session %s: deleted while reading", sessionstore.ErrNotFound, b.id)
	}
	return &sessionstore.CorruptionError{ID: b.id, Path: recordsPath, Offset: r.Offset, Revision: r.Rev,
		Err: fmt.Errorf("%s: %w", blobsPath, err)}
}

// errNoContent reports a reference to content the session's rows lack.
var errNoContent = errors.New("no such content")

// gone reports whether session id no longer exists.
func (s *Store) gone(ctx context.Context, id session.SessionID) bool {
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgstore_sessions WHERE id = $1)`, string(id)).Scan(&exists)
	return err == nil && !exists
}

// ReadBlob implements sessionstore.Store: the content session id
// holds for ref, checked against its size and SHA-256.
func (s *Store) ReadBlob(ctx context.Context, id session.SessionID, ref session.ContentRef) ([]byte, error) {
	if err := s.readyID(ctx, id); err != nil {
		return nil, err
	}
	var content []byte
	err := s.pool.QueryRow(ctx, `SELECT content FROM pgstore_blobs WHERE session_id = $1 AND sha256 = $2`,
		string(id), ref.SHA256).Scan(&content)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		what := "content " + ref.SHA256
		if s.gone(ctx, id) {
			what = "no such session"
		}
		return nil, fmt.Errorf("%w: session %s: %s", sessionstore.ErrNotFound, id, what)
	case err != nil:
		return nil, wrapErr("read content of", id, err)
	}
	if err := blob.Check(ref, content); err != nil {
		return nil, &sessionstore.CorruptionError{ID: id, Path: blobsPath, Err: fmt.Errorf("content %s: %w", ref.SHA256, err)}
	}
	return content, nil
}

// refAt is a reference and the record that first holds it.
type refAt struct {
	ref session.ContentRef
	rec *record.Rec
}

// verifyBlobs checks, in the database, the content each reference names:
// that the session holds it, with the reference's size, and that its
// SHA-256 is the reference's (the server hashes the content; none of it
// is sent). The first failure, by revision, is a *sessionstore.
// CorruptionError at the record that first holds the reference.
func (s *Store) verifyBlobs(ctx context.Context, id session.SessionID, refs map[session.ContentRef]refAt) error {
	if len(refs) == 0 {
		return nil
	}
	hashes := make([]string, 0, len(refs))
	for ref := range refs {
		hashes = append(hashes, ref.SHA256)
	}
	rows, err := s.pool.Query(ctx, `SELECT sha256, size, octet_length(content), encode(sha256(content), 'hex') = sha256
		FROM pgstore_blobs WHERE session_id = $1 AND sha256 = ANY($2)`, string(id), hashes)
	if err != nil {
		return wrapErr("verify content of", id, err)
	}
	type row struct {
		size, length int64
		sound        bool
	}
	found := map[string]row{}
	var hash string
	var r row
	if _, err := pgx.ForEachRow(rows, []any{&hash, &r.size, &r.length, &r.sound}, func() error {
		found[hash] = r
		return nil
	}); err != nil {
		return wrapErr("verify content of", id, err)
	}
	var bad []refAt
	var why []error
	for ref, at := range refs {
		r, ok := found[ref.SHA256]
		var err error
		switch {
		case !ok:
			err = errNoContent
		case r.length != r.size:
			err = fmt.Errorf("%w: %d bytes, its row says %d", blob.ErrMismatch, r.length, r.size)
		case r.size != ref.Size:
			err = blob.SizeMismatch(r.size, ref.Size)
		case !r.sound:
			err = blob.HashMismatch()
		default:
			continue
		}
		bad, why = append(bad, at), append(why, err)
	}
	if len(bad) == 0 {
		return nil
	}
	first := 0
	for i := range bad {
		if bad[i].rec.Rev < bad[first].rec.Rev || bad[i].rec.Rev == bad[first].rec.Rev && bad[i].ref.SHA256 < bad[first].ref.SHA256 {
			first = i
		}
	}
	at := bad[first]
	return &sessionstore.CorruptionError{ID: id, Path: recordsPath, Offset: at.rec.Offset, Revision: at.rec.Rev,
		Err: fmt.Errorf("%s: content %s: %w", blobsPath, at.ref.SHA256, why[first])}
}

// importBlobs inserts in tx, for session id, the blobs refs name (the
// pages or the content record r references) not inserted before (seen),
// from src, checked. A reference src cannot satisfy is corruption at r.
func importBlobs(ctx context.Context, tx pgx.Tx, id session.SessionID, r *record.Rec, refs []session.ContentRef, src sessionstore.BlobSource, seen map[string]int64) error {
	put, added := blobPut(ctx, tx, id, seen)
	for _, ref := range refs {
		if _, ok := seen[ref.SHA256]; ok {
			continue
		}
		if _, ok := added[ref.SHA256]; ok {
			continue
		}
		content, err := blob.Fetch(src, ref)
		if errors.Is(err, blob.ErrMissing) {
			return &sessionstore.CorruptionError{ID: id, Path: recordsPath, Offset: r.Offset, Revision: r.Rev, Err: err}
		}
		if err != nil {
			return opErr("import", id, fmt.Errorf("content %s: %w", ref.SHA256, err))
		}
		if err := put(ref.SHA256, content); err != nil {
			return err
		}
	}
	maps.Copy(seen, added)
	return nil
}
