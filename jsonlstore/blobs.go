package jsonlstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Blobs are part content kept out of line, content-addressed, in the
// session's own directory (so `cp -r` of a session directory copies
// everything it needs):
//
//	<session>/blobs/<sha256 hex>        the content, as is
//	<session>/blobs/<sha256 hex>.zst    the content, zstd-compressed (when that saves an eighth)
//
// The name is the SHA-256 of the content (uncompressed). A blob is written
// under a temporary name (.blob-<random>.tmp), synced, and renamed to its
// name; the directory is synced before any record that references the
// blob is written. So a committed record's blobs are durable, a blob file
// under its name is whole, and a crash leaves at worst a temporary file (a
// holder sweeps it) or a blob no record references (compaction or repair
// removes it; a reader never does). The same content attached twice is
// the same name: it is stored once.

const (
	// BlobDir is the directory of a session's blobs.
	BlobDir       = layout.BlobDir
	blobTmpPrefix = ".blob-"
	zstSuffix     = ".zst"
)

func blobDir(id session.SessionID) string { return layout.SessionDir(id) + "/" + BlobDir }

// blobName returns the file name of a blob of hash, compressed or not.
func blobName(hash string, compressed bool) string {
	if compressed {
		return hash + zstSuffix
	}
	return hash
}

// blobWriter puts a holder's new blobs into a session directory dir (the
// final one, or the temporary one of a session being created) and makes
// them durable before the record that references them.
type blobWriter struct {
	fs      vfs.FS
	dir     string            // the session directory
	ext     blob.Externalizer // content at or above the threshold goes to put
	known   map[string]bool   // hashes present in the directory
	pending []string          // hashes written since the last sync
	dirMade bool              // blobs/ was created since the last sync
	// arrivals and sizes are the check of references that parts bring
	// (checkRefs): what was checked, and the content sizes found.
	arrivals blob.Arrivals
	sizes    map[string]int64
	// Files of a session not yet published are synced together, by sync
	// (createhistory.go), not one by one as they are written.
	deferred deferredFiles
}

// blobEncoder compresses blobs. EncodeAll may be called concurrently and
// keeps nothing between calls, so one encoder serves every writer.
var blobEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest)) // fixed options: cannot fail
	return enc
})

// newBlobWriter returns the blob writer of session directory dir that
// keeps content of at least threshold bytes out of line (0 or less: none,
// blob.Externalizer).
func newBlobWriter(fsys vfs.FS, dir string, threshold int) *blobWriter {
	b := &blobWriter{fs: fsys, dir: dir, known: map[string]bool{}}
	b.ext = blob.Externalizer{Threshold: threshold, Put: b.put}
	return b
}

// Externalize implements sessnap.Externalizer (blob.Externalizer): content
// of at least the threshold is put into the session's blobs (unless there
// already) and replaced by its reference.
func (b *blobWriter) Externalize(field string, content []byte) (session.ContentRef, bool, error) {
	if b == nil {
		return session.ContentRef{}, false, nil
	}
	return b.ext.Externalize(field, content)
}

// forget drops what the writer knows of the blob of hash, which a blob
// collection removed: a later append stores its content again, and a
// reference to it is checked again (so the check of references already
// made starts over).
func (b *blobWriter) forget(hash string) {
	if b == nil {
		return
	}
	delete(b.known, hash)
	delete(b.sizes, hash)
	b.arrivals = blob.Arrivals{}
}

// PutPage implements record.PageStore: a page is a blob like any other.
func (b *blobWriter) PutPage(content []byte) (string, error) { return b.ext.PutPage(content) }

// put writes content under hash, unless the blob of that hash holds it
// already. A file under the blob's name is not taken on trust: a blob
// damaged after it was written (cut short, emptied, overwritten) would
// otherwise be referenced again by a record acknowledged as durable. So
// the first time a writer puts a hash it finds there (blobHolds: the size,
// then the bytes compared), a file that does not hold content is replaced
// by one that does: written under a temporary name, synced, renamed over
// it, and the directory synced before the record (sync). That costs one
// read of each blob a writer references again and did not write itself,
// once per writer (known), against the write it saves.
func (b *blobWriter) put(hash string, content []byte) error {
	if b.known[hash] {
		return nil
	}
	if b.deferred.on {
		return b.putNew(hash, content)
	}
	dir := b.dir + "/" + BlobDir
	name, holds := blobHolds(b.fs, dir+"/", hash, content)
	if holds {
		b.known[hash] = true
		return nil
	}
	var data []byte
	if name == "" { // a new blob
		if err := b.fs.Mkdir(dir, layout.DirPerm); err == nil {
			b.dirMade = true
		} else if !errors.Is(err, fs.ErrExist) {
			return layout.OpErr("blobs", "", err)
		}
		var compressed bool
		data, compressed = b.compress(content)
		name = blobName(hash, compressed)
	} else if name == blobName(hash, false) { // a damaged blob, replaced under its name
		data = content
	} else {
		data = blobEncoder().EncodeAll(content, make([]byte, 0, len(content)/2))
	}
	tmp := dir + "/" + blobTmpPrefix + layout.RandomSuffix() + layout.TmpSuffix
	f, err := b.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return layout.PathErr("write blob", "", dir+"/"+hash, err)
	}
	err = layout.WriteAll(f, data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = b.fs.Rename(tmp, dir+"/"+name)
	}
	if err != nil {
		_ = b.fs.Remove(tmp)
		return layout.PathErr("write blob", "", dir+"/"+hash, err)
	}
	b.known[hash] = true
	if _, ok := b.sizes[hash]; ok {
		b.sizes[hash] = int64(len(content))
	}
	b.pending = append(b.pending, hash)
	return nil
}

// putNew is put in the temporary directory of a session being created
// (deferredFiles): the directory holds no blob but those this writer put
// (known), nobody reads it before it is published, and a crash before
// leaves only a temporary directory, which is never published. So a blob
// is created under its own name, its file synced with the others before
// publish (deferredFiles.sync): no look for an existing blob, no
// temporary name, no rename.
func (b *blobWriter) putNew(hash string, content []byte) error {
	d := &b.deferred
	if d.dir == nil {
		dir := b.dir + "/" + BlobDir
		if err := b.fs.Mkdir(dir, layout.DirPerm); err != nil {
			return layout.OpErr("blobs", "", err)
		}
		b.dirMade = true
		sub, err := vfs.Sub(b.fs, dir)
		if err != nil {
			return layout.OpErr("blobs", "", err)
		}
		d.dir = sub
	}
	data, compressed := b.compress(content)
	name := blobName(hash, compressed)
	f, err := d.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err == nil {
		if err = layout.WriteAll(f, data); err == nil {
			err = d.add(f) // synced and closed by sync
		} else {
			_ = f.Close() // the session is abandoned: the error is the write's
		}
	}
	if err != nil {
		return layout.PathErr("write blob", "", b.dir+"/"+BlobDir+"/"+name, err)
	}
	b.known[hash] = true
	b.pending = append(b.pending, hash)
	return nil
}

// compress returns content zstd-compressed when that saves at least an
// eighth, else content as is.
func (b *blobWriter) compress(content []byte) ([]byte, bool) {
	z := blobEncoder().EncodeAll(content, make([]byte, 0, len(content)/2))
	if len(z) <= len(content)-len(content)/8 {
		return z, true
	}
	return content, false
}

// sync makes the blobs written since the last sync durable under their
// names (each file was synced when written, or is synced here, deferred):
// it syncs blobs/ and, when it was just created, the session directory —
// except the temporary directory of a session being created, which
// publish syncs.
func (b *blobWriter) sync() error {
	if b == nil || len(b.pending) == 0 && !b.dirMade {
		return nil
	}
	if err := b.deferred.sync(); err != nil {
		return layout.OpErr("sync blobs", "", err)
	}
	if d := b.deferred.dir; d != nil {
		err := d.SyncDir(".")
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		b.deferred.dir = nil
		if err != nil {
			return layout.OpErr("sync blobs", "", err)
		}
		b.pending, b.dirMade = b.pending[:0], false
		return nil
	}
	if err := b.fs.SyncDir(b.dir + "/" + BlobDir); err != nil {
		return layout.OpErr("sync blobs", "", err)
	}
	if b.dirMade {
		if err := b.fs.SyncDir(b.dir); err != nil {
			return layout.OpErr("sync blobs", "", err)
		}
	}
	b.pending, b.dirMade = b.pending[:0], false
	return nil
}

// moved points the writer at the session's directory after creation
// renamed it into place.
func (b *blobWriter) moved(dir string) {
	if b != nil {
		b.dir = dir
	}
}

// maxBlobBytes bounds the content of one blob a reader accepts.
const maxBlobBytes = 1 << 40

// blobDecoders are capped zstd decoders for blobs, shared by readers.
var blobDecoders = sync.Pool{New: func() any {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(archive.Window)) // fixed options: cannot fail
	return d
}}

// ErrBlob reports a blob that is missing, damaged or of the wrong content.
var ErrBlob = errors.New("jsonlstore: blob missing or damaged")

// readBlob returns the content of ref from session id's blobs, checked
// against its size and SHA-256. A missing blob, or one whose content is
// not what the reference says, is a *sessionstore.CorruptionError naming
// the blob file (wrapping ErrBlob).
func (s *Store) readBlob(id session.SessionID, ref session.ContentRef) ([]byte, error) {
	return s.readBlobVia(nil, id, ref)
}

// readBlobVia is readBlob through d, an open blobs/ directory (nil: by
// path from the root). A reference of size sizeAny or sizeJustified
// reads a blob of any size, as readBlobIn does (its user checks the
// size). What it allocates follows the blob's file, not ref's size.
func (s *Store) readBlobVia(d *blobDirReader, id session.SessionID, ref session.ContentRef) ([]byte, error) {
	if !blob.ValidHash(ref.SHA256) || ref.Size < sizeJustified || ref.Size > maxBlobBytes {
		return nil, s.blobErr(id, ref.SHA256, fmt.Errorf("invalid reference %+v", ref))
	}
	var content []byte
	var name string
	var err error
	if d != nil {
		content, name, err = d.read(ref.SHA256, ref.Size)
	} else {
		content, name, err = s.readBlobFile(id, ref.SHA256, ref.Size)
	}
	if err != nil {
		return nil, s.blobErr(id, name, err)
	}
	if ref.Size >= 0 {
		err = blob.Check(ref, content)
	} else {
		err = blob.CheckHash(ref.SHA256, content) // a read of any size: the caller checks it
	}
	if err != nil {
		return nil, s.blobErr(id, name, err)
	}
	return content, nil
}

// checkBlob checks, streaming, that session id's blob of ref holds what
// ref says: what readBlob would find, the same errors, without holding
// the content (checkBlobIn).
func (s *Store) checkBlob(id session.SessionID, ref session.ContentRef) error {
	if !blob.ValidHash(ref.SHA256) || ref.Size < 0 || ref.Size > maxBlobBytes {
		return s.blobErr(id, ref.SHA256, fmt.Errorf("invalid reference %+v", ref))
	}
	name, err := checkBlobIn(s.fs, blobDir(id)+"/", ref.SHA256, ref.Size)
	if err != nil {
		return s.blobErr(id, name, err)
	}
	return nil
}

// blobErr is the error of reading session id's blob file name: a
// *sessionstore.CorruptionError naming it, wrapping ErrBlob (a missing
// blob, "no such blob").
func (s *Store) blobErr(id session.SessionID, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		name, err = strings.TrimSuffix(name, zstSuffix), errors.New("no such blob")
	}
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) {
		return err
	}
	if layout.AccessErr(err) { // no evidence of damage: the blob may be sound
		return layout.PathErr("read", id, blobDir(id)+"/"+name, err)
	}
	return &sessionstore.CorruptionError{ID: id, Path: blobDir(id) + "/" + name, Err: fmt.Errorf("%w: %w", ErrBlob, err)}
}

// readBlobFile reads the blob of hash (raw or compressed, openBlob),
// whose content must be size bytes (any, for sizeAny).
func (s *Store) readBlobFile(id session.SessionID, hash string, size int64) ([]byte, string, error) {
	return readBlobIn(s.fs, blobDir(id)+"/", hash, size, hintNone)
}

// blobDirReader reads the blobs of one directory through a descriptor of
// it, knowing which are compressed from one listing: a blob costs one
// open, not one per path component and name tried.
type blobDirReader struct {
	fs     vfs.SubFS
	listed map[string]blobHint // hash -> which of its files are listed
}

// openBlobDir opens session id's blobs/ for reading, nil when it cannot
// (readers then go by path).
func (s *Store) openBlobDir(id session.SessionID) *blobDirReader {
	sub, err := vfs.Sub(s.fs, blobDir(id))
	if err != nil {
		return nil
	}
	entries, err := sub.ReadDir(".")
	if err != nil {
		_ = sub.Close()
		return nil
	}
	d := &blobDirReader{fs: sub, listed: make(map[string]blobHint, len(entries))}
	for _, e := range entries {
		h, z := strings.CutSuffix(e.Name(), zstSuffix)
		switch {
		case !blob.ValidHash(h):
		case !z:
			d.listed[h] = hintRaw // the blob, whatever else is listed (openBlob)
		case d.listed[h] == hintNone:
			d.listed[h] = hintZst
		}
	}
	return d
}

func (d *blobDirReader) close() { _ = d.fs.Close() } // read-only

func (d *blobDirReader) read(hash string, size int64) ([]byte, string, error) {
	return readBlobIn(d.fs, "", hash, size, d.listed[hash])
}

// blobNames lists the blob files of session id (temporary files left
// out), in name order.
func (s *Store) blobNames(id session.SessionID) ([]string, error) {
	entries, err := s.fs.ReadDir(blobDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && blob.ValidHash(strings.TrimSuffix(e.Name(), zstSuffix)) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
