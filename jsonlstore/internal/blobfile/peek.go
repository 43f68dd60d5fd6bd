package blobfile

import (
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/session"
)

// Peeking at a blob: a reader that looks at the content and keeps none
// of it (the secret scan) reads each blob into buffers it reuses, through
// a decoder of its own, so that a scan of a store's blobs allocates no
// content buffer per blob (nor the garbage collection of one). What it
// may cost is what ReadIn's rule allows (read.go): a compressed blob is
// decoded in one pass into a buffer of its content's size only where its
// file justifies that size; other blobs, rare, are read by ReadVia.
//
// A peek checks the content's size, not its SHA-256: its reader looks
// at the bytes the file holds, whatever they are, and gives none of them
// back as the content the reference names. It is told which file it
// opened (its vfs.Identity) before it reads it, and may skip a file it
// has looked at already.

// Peeker reads blobs into buffers it reuses. Not safe for concurrent
// use: one per goroutine.
type Peeker struct {
	dec     *zstd.Decoder
	in, out []byte
}

// NewPeeker returns a Peeker; Close releases its decoder.
func NewPeeker() *Peeker {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(archive.Window), zstd.WithDecodeAllCapLimit(true)) // fixed options: cannot fail
	return &Peeker{dec: d}
}

// Close releases the Peeker's decoder and buffers.
func (p *Peeker) Close() {
	p.dec.Close()
	p.in, p.out = nil, nil
}

// Peek reads the content of session id's blob of ref through d (nil: by
// path), checked against ref's size, not its hash. Once the blob's file
// is open, skip is called with its identity (the zero Identity when the
// file system does not say); when it returns true, Peek reads nothing
// and returns nil, true. The content is valid until the Peeker's next
// read. Errors are ReadVia's.
func (p *Peeker) Peek(fsys vfs.FS, d *DirReader, id session.SessionID, ref session.ContentRef, skip func(vfs.Identity) bool) ([]byte, bool, error) {
	if !blob.ValidHash(ref.SHA256) || ref.Size < 0 || ref.Size > MaxBytes {
		return nil, false, blobErr(id, ref.SHA256, fmt.Errorf("invalid reference %+v", ref))
	}
	dir, prefix, hint := fsys, Dir(id)+"/", HintNone
	if d != nil {
		dir, prefix, hint = d.fs, "", d.listed[ref.SHA256]
	}
	f, name, compressed, err := openBlob(dir, prefix, ref.SHA256, hint)
	if err != nil {
		return nil, false, blobErr(id, name, err)
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return nil, false, blobErr(id, name, err)
	}
	if skip(vfs.IdentityOf(fi)) {
		return nil, true, nil
	}
	content, err := p.read(f, fi.Size(), compressed, ref.Size)
	if errors.Is(err, errNotJustified) {
		content, err = ReadVia(fsys, d, id, ref) // the rule's slow path, checked
		return content, false, err
	}
	if err == nil && int64(len(content)) != ref.Size {
		err = blob.SizeMismatch(int64(len(content)), ref.Size)
	}
	if err != nil {
		return nil, false, blobErr(id, name, err)
	}
	return content, false, nil
}

// read reads f, a blob's file of size bytes whose content must be want
// bytes, into p's buffers: errNotJustified for a compressed file that
// does not justify want (or whose frame does not say its size within
// what the one-pass decode allows).
func (p *Peeker) read(f vfs.File, size int64, compressed bool, want int64) ([]byte, error) {
	if !compressed {
		if size != want {
			return nil, blob.SizeMismatch(size, want)
		}
		p.out = grow(p.out, want)
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), p.out); err != nil {
			return nil, err
		}
		return p.out, nil
	}
	if fcs, ok := zstContentSize(f, size); ok && fcs > want {
		return nil, fmt.Errorf("its frame header records %d bytes, the reference says %d", fcs, want)
	}
	if want > size*PresizeRatio+64<<10 || size > want+want/128+1<<10 {
		return nil, errNotJustified
	}
	p.in = grow(p.in, size)
	if _, err := f.ReadAt(p.in, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	p.out = grow(p.out, want+decodeSlack)
	content, err := p.dec.DecodeAll(p.in, p.out[:0])
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || err == nil && int64(len(content)) > want:
		return nil, blob.LongerThan(want)
	case err != nil:
		return nil, err
	}
	return content, nil
}

// grow returns b resliced to n bytes, a new buffer when b has not the
// room.
func grow(b []byte, n int64) []byte {
	if int64(cap(b)) >= n {
		return b[:n]
	}
	return make([]byte, n, n+n/4)
}
