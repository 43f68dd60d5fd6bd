package blobfile

import (
	"errors"
	"fmt"
	"io"
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
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Prefix and suffix of blob files: a blob being written, a compressed blob.
const (
	TmpPrefix = ".blob-"
	ZstSuffix = ".zst"
)

// Dir is session id's blobs/ directory.
func Dir(id session.SessionID) string { return layout.SessionDir(id) + "/" + layout.BlobDir }

// Name returns the file name of a blob of hash, compressed or not.
func Name(hash string, compressed bool) string {
	if compressed {
		return hash + ZstSuffix
	}
	return hash
}

// Writer puts a holder's new blobs into a session directory dir (the
// final one, or the temporary one of a session being created) and makes
// them durable before the record that references them.
type Writer struct {
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
	// (Deferred), not one by one as they are written.
	deferred Deferred
	// source is the blobs/ of the session a new one takes its blobs from
	// (ShareFrom), shared says how they got there.
	source string
	shared Shared
	linker vfs.DirLinker // source's blobs/ into this one's, once opened
}

// encoder compresses blobs. EncodeAll may be called concurrently and
// keeps nothing between calls, so one encoder serves every writer.
var encoder = sync.OnceValue(func() *zstd.Encoder {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest)) // fixed options: cannot fail
	return enc
})

// NewWriter returns the blob writer of session directory dir that
// keeps content of at least threshold bytes out of line (0 or less: none,
// blob.Externalizer).
func NewWriter(fsys vfs.FS, dir string, threshold int) *Writer {
	b := &Writer{fs: fsys, dir: dir, known: map[string]bool{}}
	b.ext = blob.Externalizer{Threshold: threshold, Put: b.Put}
	return b
}

// Externalize implements sessnap.Externalizer (blob.Externalizer): content
// of at least the threshold is put into the session's blobs (unless there
// already) and replaced by its reference.
func (b *Writer) Externalize(field string, content []byte) (session.ContentRef, bool, error) {
	if b == nil {
		return session.ContentRef{}, false, nil
	}
	return b.ext.Externalize(field, content)
}

// Forget drops what the writer knows of the blob of hash, which a blob
// collection removed: a later append stores its content again, and a
// reference to it is checked again (so the check of references already
// made starts over).
func (b *Writer) Forget(hash string) {
	if b == nil {
		return
	}
	delete(b.known, hash)
	delete(b.sizes, hash)
	b.arrivals = blob.Arrivals{}
}

// PutPage implements record.PageStore: a page is a blob like any other.
func (b *Writer) PutPage(content []byte) (string, error) { return b.ext.PutPage(content) }

// Put writes content under hash, unless the blob of that hash holds it
// already. A file under the blob's name is not taken on trust: a blob
// damaged after it was written (cut short, emptied, overwritten) would
// otherwise be referenced again by a record acknowledged as durable. So
// the first time a writer puts a hash it finds there (blobHolds: the size,
// then the bytes compared), a file that does not hold content is replaced
// by one that does: written under a temporary name, synced, renamed over
// it, and the directory synced before the record (sync). That costs one
// Read of each blob a writer references again and did not write itself,
// once per writer (known), against the write it saves.
func (b *Writer) Put(hash string, content []byte) error {
	if b.known[hash] {
		return nil
	}
	if b.deferred.on {
		return b.putNew(hash, content)
	}
	dir := b.dir + "/" + layout.BlobDir
	name, holds := Holds(b.fs, dir+"/", hash, content)
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
		name = Name(hash, compressed)
	} else if name == Name(hash, false) { // a damaged blob, replaced under its name
		data = content
	} else {
		data = encoder().EncodeAll(content, make([]byte, 0, len(content)/2))
	}
	// blobs/ itself is synced by Sync, before the record naming the blob.
	rep := vfs.Replace{Dir: dir, Tmp: TmpPrefix + layout.RandomSuffix() + layout.TmpSuffix, Name: name, Perm: layout.FilePerm, SyncFile: true}
	if err := rep.Write(b.fs, data); err != nil {
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
func (b *Writer) putNew(hash string, content []byte) error {
	if b.source != "" {
		if ok, err := b.share(hash); ok || err != nil {
			return err
		}
	}
	if err := b.mkdirDeferred(); err != nil {
		return err
	}
	d := &b.deferred
	data, compressed := b.compress(content)
	name := Name(hash, compressed)
	f, err := d.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err == nil {
		if err = layout.WriteAll(f, data); err == nil {
			err = d.Add(f) // synced and closed by sync
		} else {
			_ = f.Close() // the session is abandoned: the error is the write's
		}
	}
	if err != nil {
		return layout.PathErr("write blob", "", b.dir+"/"+layout.BlobDir+"/"+name, err)
	}
	b.known[hash] = true
	b.pending = append(b.pending, hash)
	return nil
}

// mkdirDeferred makes blobs/ in the temporary directory of a session
// being created, once, and opens it (Deferred).
func (b *Writer) mkdirDeferred() error {
	d := &b.deferred
	if d.dir != nil {
		return nil
	}
	dir := b.dir + "/" + layout.BlobDir
	if err := b.fs.Mkdir(dir, layout.DirPerm); err != nil {
		return layout.OpErr("blobs", "", err)
	}
	b.dirMade = true
	sub, err := vfs.Sub(b.fs, dir)
	if err != nil {
		return layout.OpErr("blobs", "", err)
	}
	d.dir = sub
	return nil
}

// compress returns content zstd-compressed when that saves at least an
// eighth, else content as is.
func (b *Writer) compress(content []byte) ([]byte, bool) {
	z := encoder().EncodeAll(content, make([]byte, 0, len(content)/2))
	if len(z) <= len(content)-len(content)/8 {
		return z, true
	}
	return content, false
}

// Sync makes the blobs written since the last sync durable under their
// names (each file was synced when written, or is synced here, deferred):
// it syncs blobs/ and, when it was just created, the session directory —
// except the temporary directory of a session being created, which
// publish syncs.
func (b *Writer) Sync() error {
	if b == nil {
		return nil
	}
	b.closeLinker()
	if len(b.pending) == 0 && !b.dirMade {
		return nil
	}
	if err := b.deferred.Sync(); err != nil {
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
	if err := b.fs.SyncDir(b.dir + "/" + layout.BlobDir); err != nil {
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

// Moved points the writer at the session's directory after creation
// renamed it into place.
func (b *Writer) Moved(dir string) {
	if b != nil {
		b.dir = dir
	}
}

// MaxBytes bounds the content of one blob a reader accepts.
const MaxBytes = 1 << 40

// decoders are capped zstd decoders for blobs, shared by readers.
var decoders = sync.Pool{New: func() any {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(archive.Window)) // fixed options: cannot fail
	return d
}}

// Read returns the content of ref from session id's blobs, checked
// against its size and SHA-256. A missing blob, or one whose content is
// not what the reference says, is a *sessionstore.CorruptionError naming
// the blob file (wrapping ErrBlob).
func Read(fsys vfs.FS, id session.SessionID, ref session.ContentRef) ([]byte, error) {
	return ReadVia(fsys, nil, id, ref)
}

// ReadVia is readBlob through d, an open blobs/ directory (nil: by
// path from the root). A reference of size sizeAny or sizeJustified
// reads a blob of any size, as readBlobIn does (its user checks the
// size). What it allocates follows the blob's file, not ref's size.
func ReadVia(fsys vfs.FS, d *DirReader, id session.SessionID, ref session.ContentRef) ([]byte, error) {
	if !blob.ValidHash(ref.SHA256) || ref.Size < SizeJustified || ref.Size > MaxBytes {
		return nil, blobErr(id, ref.SHA256, fmt.Errorf("invalid reference %+v", ref))
	}
	var content []byte
	var name string
	var err error
	if d != nil {
		content, name, err = d.Read(ref.SHA256, ref.Size)
	} else {
		content, name, err = ReadFile(fsys, id, ref.SHA256, ref.Size)
	}
	if err != nil {
		return nil, blobErr(id, name, err)
	}
	if ref.Size >= 0 {
		err = blob.Check(ref, content)
	} else {
		err = blob.CheckHash(ref.SHA256, content) // a read of any size: the caller checks it
	}
	if err != nil {
		return nil, blobErr(id, name, err)
	}
	return content, nil
}

// Check checks, streaming, that session id's blob of ref holds what
// ref says: what readBlob would find, the same errors, without holding
// the content (checkBlobIn).
func Check(fsys vfs.FS, id session.SessionID, ref session.ContentRef) error {
	if !blob.ValidHash(ref.SHA256) || ref.Size < 0 || ref.Size > MaxBytes {
		return blobErr(id, ref.SHA256, fmt.Errorf("invalid reference %+v", ref))
	}
	name, err := checkBlobIn(fsys, Dir(id)+"/", ref.SHA256, ref.Size)
	if err != nil {
		return blobErr(id, name, err)
	}
	return nil
}

// FileFor returns the name of the file that is the blob of hash among
// the blob files has holds (openBlob's rule: its raw file when there is
// one, else <hash>.zst), and whether has holds it.
func FileFor(has func(name string) bool, hash string) (string, bool) {
	if has(hash) {
		return hash, true
	}
	name := Name(hash, true)
	return name, has(name)
}

// CheckFile is Check of the blob's file already open: f, of size bytes,
// the file name (FileFor) of ref's blob in session id (a backup's copy,
// read back through the descriptor that wrote it).
func CheckFile(id session.SessionID, name string, f io.ReaderAt, size int64, ref session.ContentRef) error {
	if !blob.ValidHash(ref.SHA256) || ref.Size < 0 || ref.Size > MaxBytes {
		return blobErr(id, ref.SHA256, fmt.Errorf("invalid reference %+v", ref))
	}
	if err := checkOpen(f, size, strings.HasSuffix(name, ZstSuffix), ref.SHA256, ref.Size); err != nil {
		return blobErr(id, name, err)
	}
	return nil
}

// ReadOpenFile is Read of the blob's file already open: f, of size
// bytes, the file name (FileFor) of ref's blob in session id.
func ReadOpenFile(id session.SessionID, name string, f io.ReaderAt, size int64, ref session.ContentRef) ([]byte, error) {
	if !blob.ValidHash(ref.SHA256) || ref.Size < 0 || ref.Size > MaxBytes {
		return nil, blobErr(id, ref.SHA256, fmt.Errorf("invalid reference %+v", ref))
	}
	content, err := readOpen(f, size, strings.HasSuffix(name, ZstSuffix), ref.SHA256, ref.Size)
	if err == nil {
		err = blob.Check(ref, content)
	}
	if err != nil {
		return nil, blobErr(id, name, err)
	}
	return content, nil
}

// blobErr is the error of reading session id's blob file name: a
// *sessionstore.CorruptionError naming it, wrapping ErrBlob (a missing
// blob, "no such blob").
func blobErr(id session.SessionID, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		name, err = strings.TrimSuffix(name, ZstSuffix), errors.New("no such blob")
	}
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) {
		return err
	}
	if layout.AccessErr(err) { // no evidence of damage: the blob may be sound
		return layout.PathErr("read", id, Dir(id)+"/"+name, err)
	}
	return &sessionstore.CorruptionError{ID: id, Path: Dir(id) + "/" + name, Err: fmt.Errorf("%w: %w", maintenance.ErrBlob, err)}
}

// ReadFile reads the blob of hash (raw or compressed, openBlob),
// whose content must be size bytes (any, for sizeAny).
func ReadFile(fsys vfs.FS, id session.SessionID, hash string, size int64) ([]byte, string, error) {
	return ReadIn(fsys, Dir(id)+"/", hash, size, HintNone)
}

// DirReader reads the blobs of one directory through a descriptor of
// it, knowing which are compressed from one listing (OpenDir): a blob
// costs one open, not one per path component and name tried. Unlisted
// (OpenDirUnlisted), a blob costs the opens of the names it tries.
type DirReader struct {
	fs     vfs.SubFS
	listed map[string]Hint // hash -> which of its files are listed
}

// OpenDir opens session id's blobs/ for reading, nil when it cannot
// (readers then go by path).
func OpenDir(fsys vfs.FS, id session.SessionID) *DirReader {
	sub, err := vfs.Sub(fsys, Dir(id))
	if err != nil {
		return nil
	}
	names, err := vfs.ReadDirNames(sub, ".") // names only: no stat of each blob
	if err != nil {
		_ = sub.Close()
		return nil
	}
	d := &DirReader{fs: sub, listed: make(map[string]Hint, len(names))}
	for _, name := range names {
		h, z := strings.CutSuffix(name, ZstSuffix)
		switch {
		case !blob.ValidHash(h):
		case !z:
			d.listed[h] = HintRaw // the blob, whatever else is listed (openBlob)
		case d.listed[h] == HintNone:
			d.listed[h] = HintZst
		}
	}
	return d
}

// OpenDirUnlisted opens session id's blobs/ for reading without listing
// it, nil when it cannot: each blob read looks for its raw file, then its
// compressed one, by name relative to the directory (openBlob), as one
// written since a listing is looked for.
func OpenDirUnlisted(fsys vfs.FS, id session.SessionID) *DirReader {
	sub, err := vfs.Sub(fsys, Dir(id))
	if err != nil {
		return nil
	}
	return &DirReader{fs: sub}
}

// Close closes the directory.
func (d *DirReader) Close() { _ = d.fs.Close() } // read-only

// Read reads the blob of hash, as ReadIn does.
func (d *DirReader) Read(hash string, size int64) ([]byte, string, error) {
	return ReadIn(d.fs, "", hash, size, d.listed[hash])
}

// Names lists the blob files of session id (temporary files left
// out), in name order.
func Names(fsys vfs.FS, id session.SessionID) ([]string, error) {
	entries, err := fsys.ReadDir(Dir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && blob.ValidHash(strings.TrimSuffix(e.Name(), ZstSuffix)) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// IsTemp reports whether name, in a session's blobs/, is a temporary blob
// file as the store names them (.blob-<suffix>.tmp).
func IsTemp(name string) bool {
	rest, ok := strings.CutPrefix(name, TmpPrefix)
	if !ok {
		return false
	}
	suffix, ok := strings.CutSuffix(rest, layout.TmpSuffix)
	return ok && layout.IsSuffix(suffix)
}
