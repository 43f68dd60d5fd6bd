package blobfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The references a snapshot's parts bring with them (parts loaded without
// their content) must name blobs the session holds, with their size
// (sessionstore.Writer.Append's contract): a record never references a
// blob its session directory lacks.

// CheckRefs refuses, with ErrInvalidSnapshot, msgs holding a reference to
// content the session directory does not hold with that SHA-256 and size
// (blob.Arrivals: the messages after those checked before, when msgs
// continue them). A blob's file is looked at once per writer. A nil writer
// (FullRecordsOnly: nothing is kept out of line) refuses every reference
// (blob.Refuse).
func (b *Writer) CheckRefs(id session.SessionID, msgs sessnap.Messages) error {
	if b == nil {
		return blob.Refuse(id, msgs)
	}
	return b.arrivals.Check(id, msgs, func(hash string) (int64, bool, error) {
		if size, ok := b.sizes[hash]; ok {
			return size, true, nil
		}
		size, ok, err := Size(b.fs, b.dir+"/"+layout.BlobDir, hash)
		if err != nil {
			return 0, false, layout.OpErr("session", id, fmt.Errorf("blob %s: %w", hash, err))
		}
		if ok {
			if b.sizes == nil {
				b.sizes = map[string]int64{}
			}
			b.sizes[hash] = size
		}
		return size, ok, nil
	})
}

// Size returns the content size of the blob of hash in dir (openBlob:
// its raw file, else <hash>.zst), and whether there is one: a raw blob's
// file size, or the content size a compressed blob's zstd frame header
// records (its content counted, keeping none of it, when the header does
// not say).
func Size(fsys vfs.FS, dir, hash string) (int64, bool, error) {
	f, _, compressed, err := openBlob(fsys, dir+"/", hash, HintNone)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	if !compressed {
		return fi.Size(), true, nil
	}
	if size, ok := zstContentSize(f, fi.Size()); ok {
		return size, true, nil
	}
	dec := decoders.Get().(*zstd.Decoder)
	defer decoders.Put(dec)
	if err := dec.Reset(io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return 0, false, err
	}
	defer func() { _ = dec.Reset(nil) }() // drop the file
	size, err := io.Copy(io.Discard, io.LimitReader(dec, MaxBytes))
	return size, err == nil, err
}
