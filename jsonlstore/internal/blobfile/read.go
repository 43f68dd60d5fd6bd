package blobfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
)

// Reading a blob: which file is the blob, and what reading one may cost.
// Both have their one home here, used by every reader (Load, History,
// export, the search feed, ReadBlob, the blob collector's page scan), by
// verify (and so Backup's check of its copy) and by the writer's check of
// a blob it is about to reference.
//
// Which file: the blob of hash is its raw file <hash> when there is one,
// else <hash>.zst (openBlob). The writer never makes both (it writes a
// blob where neither is, and replaces the one that is when it does not
// hold the content), so both exist only where something else put a file
// beside a blob; whatever it is, every reader and verify read the same
// one.
//
// What it costs: a reference may claim any size up to maxBlobBytes, but a
// reader allocates what the bytes on disk justify, never what a reference
// claims. A raw blob's file is its content: one of another size than the
// reference says is refused unread, and one of that size is read into a
// buffer of exactly its size. A compressed blob is read into a buffer of
// the size the reference (or, for a prefetch, its frame header) names
// only where its file justifies that size: at most blobPresizeRatio times
// the file's size, and no more than the frame header records. Otherwise
// (a claim out of proportion to the file, or content that really does
// expand that much) it is first decoded to count and hash it, keeping
// nothing, and read into a buffer of its exact size only once it is the
// content its name says. The decoders' window is capped (archive.Window).
// A justified read of a file no larger than its content (and a little
// framing) holds the file in memory and decodes it in one pass into the
// content's buffer, never past that buffer's capacity (decodeWhole): no
// window beside it, whatever the frames claim. So a reader holds at most
// the content it actually returns and its file, or PresizeRatio times
// the compressed file it was given, plus one window while it hashes a
// claim its file does not justify.

// PresizeRatio is how many times its compressed size a compressed
// blob's content is trusted to be before it is decoded: more than zstd
// gives on text and JSON, so the content it holds is read in one pass
// into a buffer of its size; content that expands more (long runs of one
// byte) is decoded twice, as a claim out of proportion to its file is.
const PresizeRatio = 64

// Hint is what a listing of blobs/ said of a hash: whether it listed
// the raw file, only the compressed one, or nothing (written since).
type Hint int

const (
	HintNone Hint = iota // not listed: look for both
	HintRaw              // the raw file is listed
	HintZst              // only <hash>.zst is listed: skip the raw open
)

// openBlob opens the blob of hash under prefix in fsys, by the rule: its
// raw file when there is one, else <hash>.zst. It returns the file, its
// name and whether it is compressed; an error wrapping fs.ErrNotExist
// when there is neither. A raw file that exists but cannot be opened (no
// permission, not a regular file) is the blob all the same: its error is
// returned, not the compressed file's content.
func openBlob(fsys vfs.FS, prefix, hash string, hint Hint) (vfs.File, string, bool, error) {
	if hint != HintZst {
		f, err := fsys.OpenFile(prefix+hash, layout.RDONLY, 0)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, hash, false, err
		}
	}
	name := Name(hash, true)
	f, err := fsys.OpenFile(prefix+name, layout.RDONLY, 0)
	if hint == HintZst && errors.Is(err, fs.ErrNotExist) {
		return openBlob(fsys, prefix, hash, HintNone) // listed, and gone since: look again
	}
	return f, name, true, err
}

// The sizes a reader may ask for besides a reference's: sizeAny reads a
// blob of any size (up to maxBlobBytes), decoding it twice where its file
// does not justify its size; sizeJustified (a prefetch, which may skip a
// blob: the read that needs it reads it again, knowing its size) reads a
// blob only where its file justifies its size, in one pass, and refuses
// others (errNotJustified). The caller checks the size.
const (
	SizeAny       = -1
	SizeJustified = -2
)

var errNotJustified = errors.New("a compressed blob whose file does not justify its size, left to the read that knows it")

// ReadIn reads the blob of hash under prefix in fsys (openBlob),
// returning its content and the name of the file it read. The content is
// want bytes or the read fails, except for want sizeAny or sizeJustified,
// whose caller checks the size. The caller checks the SHA-256. See the top of this file for what it
// allocates.
func ReadIn(fsys vfs.FS, prefix, hash string, want int64, hint Hint) ([]byte, string, error) {
	f, name, compressed, err := openBlob(fsys, prefix, hash, hint)
	if err != nil {
		return nil, name, err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return nil, name, err
	}
	content, err := readOpen(f, fi.Size(), compressed, hash, want)
	return content, name, err
}

// readOpen is ReadIn's read of f, the blob's file (compressed or not) of
// size bytes, open.
func readOpen(f io.ReaderAt, size int64, compressed bool, hash string, want int64) ([]byte, error) {
	if !compressed {
		return ReadRaw(io.NewSectionReader(f, 0, size), size, want)
	}
	return ReadZst(f, size, hash, want)
}

// ReadRaw reads r, a raw blob's file of size bytes, whose content
// must be want bytes (any, for sizeAny or sizeJustified: a raw file
// justifies its size).
func ReadRaw(r io.Reader, size, want int64) ([]byte, error) {
	if want >= 0 && size != want {
		return nil, blob.SizeMismatch(size, want)
	}
	if size > MaxBytes {
		return nil, fmt.Errorf("holds %d bytes, more than a blob may", size)
	}
	return readExact(r, size, size)
}

// ReadZst reads f, a compressed blob's file of size bytes, whose
// content must be want bytes (any, for sizeAny or sizeJustified) with
// SHA-256 hash.
func ReadZst(f io.ReaderAt, size int64, hash string, want int64) ([]byte, error) {
	limit := want
	if limit < 0 {
		limit = MaxBytes
	}
	expect := want // the size to read into; -1: not known
	if fcs, ok := zstContentSize(f, size); ok {
		switch {
		case fcs > limit:
			return nil, fmt.Errorf("its frame header records %d bytes, the reference says %d", fcs, want)
		case want < 0:
			expect = fcs
		}
	}
	justified := expect >= 0 && expect <= size*PresizeRatio+64<<10
	if !justified && want == SizeJustified {
		return nil, errNotJustified
	}
	if justified && size <= expect+expect/128+1<<10 {
		content, err := decodeWhole(f, size, expect)
		switch {
		case !errors.Is(err, errPastExpected):
			return content, err
		case limit == expect:
			return nil, blob.LongerThan(limit)
		}
		// More content than its frame header records, and more may be
		// read (a file of several frames): the streaming read below.
	}
	if justified {
		return readStream(f, size, expect, limit)
	}
	// Not justified by the file: count and hash the content before
	// holding any of it.
	n, sum, err := hashZst(f, size, limit)
	if err != nil {
		return nil, err
	}
	switch {
	case n > limit:
		return nil, blob.LongerThan(limit)
	case want >= 0 && n != want:
		return nil, blob.SizeMismatch(n, want)
	case sum != hash:
		return nil, blob.HashMismatch()
	}
	if size <= n+n/128+1<<10 {
		content, err := decodeWhole(f, size, n)
		if errors.Is(err, errPastExpected) {
			return nil, blob.LongerThan(n) // changed since it was hashed
		}
		return content, err
	}
	return readStream(f, size, n, n)
}

// readStream decodes f, a compressed blob's file of size bytes, through a
// pooled decoder into a buffer of expect bytes, going on up to limit
// (readExact).
func readStream(f io.ReaderAt, size, expect, limit int64) ([]byte, error) {
	dec := decoders.Get().(*zstd.Decoder)
	defer decoders.Put(dec)
	defer func() { _ = dec.Reset(nil) }() // drop the file
	if err := dec.Reset(io.NewSectionReader(f, 0, size)); err != nil {
		return nil, err
	}
	return readExact(dec, expect, limit)
}

// The hashing pass of content whose size its file does not justify goes
// through one decoder, one read at a time: such content is rare (long
// runs of one byte) or a claim out of proportion to its file, and the
// pass holds one window (at most archive.Window) once per process,
// however many readers meet one at once.
var (
	hashMu  sync.Mutex
	hashDec *zstd.Decoder
)

// hashZst counts and hashes the content of f, a compressed blob's file of
// size bytes, reading at most one byte past limit, keeping none of it.
func hashZst(f io.ReaderAt, size, limit int64) (int64, string, error) {
	hashMu.Lock()
	defer hashMu.Unlock()
	if hashDec == nil {
		hashDec = decoders.New().(*zstd.Decoder)
	}
	defer func() { _ = hashDec.Reset(nil) }() // drop the file
	if err := hashDec.Reset(io.NewSectionReader(f, 0, size)); err != nil {
		return 0, "", err
	}
	return blob.HashReader(hashDec, limit)
}

// wholeDecoders decode a compressed file held in memory into a buffer of
// the content's size, and never past its capacity (DecodeAll's cap
// limit): no window beside the content, no buffer grown and copied.
var wholeDecoders = sync.Pool{New: func() any {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(archive.Window), zstd.WithDecodeAllCapLimit(true)) // fixed options: cannot fail
	return d
}}

// fileBuffers hold compressed files while they are decoded (decodeWhole),
// reused: a resume decodes a thousand blobs, and a new buffer for each
// would be memory the process faults in and collects again. Buffers
// above maxPooledFile are not kept.
var fileBuffers sync.Pool

const maxPooledFile = 4 << 20

// fileBuffer returns a buffer of size bytes, from the pool when one there
// is large enough.
func fileBuffer(size int64) *[]byte {
	if b, ok := fileBuffers.Get().(*[]byte); ok {
		if int64(cap(*b)) >= size {
			*b = (*b)[:size]
			return b
		}
		fileBuffers.Put(b)
	}
	b := make([]byte, size)
	return &b
}

func putFileBuffer(b *[]byte) {
	if cap(*b) <= maxPooledFile {
		fileBuffers.Put(b)
	}
}

// errPastExpected: the content goes on past the size it was read for.
var errPastExpected = errors.New("the content goes on past the size expected")

// decodeSlack is the room decodeWhole leaves past the content's size in
// the buffer it decodes into: zstd's block decoder copies literals and
// matches 32 bytes at a time (compressedBlockOverAlloc in
// github.com/klauspost/compress/zstd) when the buffer has that room past
// the block it decodes, and byte-exact copies, about twice as slow, when
// it has not. A buffer of exactly the content's size made every blob's
// last block (most blobs are one block) take the slow copies.
const decodeSlack = 32

// decodeWhole reads f, a compressed blob's file of size bytes whose
// content the file justifies at expect bytes (ReadZst), into memory, and
// decodes it into a buffer of expect bytes in one pass: what it allocates
// is the file (a pooled buffer) and the content, however the frames
// describe themselves.
// Content shorter than expect is returned as it is (the caller's size
// check reports it); content longer is errPastExpected, decoded no
// further than expect and decodeSlack bytes.
func decodeWhole(f io.ReaderAt, size, expect int64) ([]byte, error) {
	in := fileBuffer(size)
	defer putFileBuffer(in)
	if _, err := f.ReadAt(*in, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	dec := wholeDecoders.Get().(*zstd.Decoder)
	defer wholeDecoders.Put(dec)
	content, err := dec.DecodeAll(*in, make([]byte, 0, expect+decodeSlack))
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || err == nil && int64(len(content)) > expect:
		return nil, errPastExpected
	case err != nil:
		return nil, err
	}
	return content, nil
}

// readExact reads r into a buffer of size bytes, and goes on reading, the
// buffer growing as bytes arrive, up to limit bytes; one more than limit
// is an error. Content shorter than size is returned as it is (the
// caller's size check reports it).
func readExact(r io.Reader, size, limit int64) ([]byte, error) {
	buf := make([]byte, size)
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return buf[:n], nil
	case err != nil:
		return nil, err
	}
	// Whether there is more, by a read of one byte: the content is
	// almost always exactly size bytes, and a buffer grown past buf would
	// copy it all.
	var probe [1]byte
	k, err := io.ReadFull(r, probe[:])
	switch {
	case k == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		return buf, nil
	case k == 0:
		return nil, err
	case size+1 > limit:
		return nil, blob.LongerThan(limit)
	}
	more := bytes.NewBuffer(append(buf, probe[0]))
	m, err := io.Copy(more, io.LimitReader(r, limit-size))
	switch {
	case err != nil:
		return nil, err
	case size+1+m > limit:
		return nil, blob.LongerThan(limit)
	}
	return more.Bytes(), nil
}

// zstContentSize returns the content size the frame header of f (a file
// of size bytes) records, if it records one.
func zstContentSize(f io.ReaderAt, size int64) (int64, bool) {
	head := make([]byte, min(size, zstd.HeaderMaxSize))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	var h zstd.Header
	if err := h.Decode(head); err != nil || !h.HasFCS {
		return 0, false
	}
	return int64(min(h.FrameContentSize, MaxBytes+1)), true // above MaxBytes: more than any reference
}

// checkBlobIn checks, streaming, that the blob of hash under prefix in
// fsys (openBlob) holds want bytes whose SHA-256 is hash: what
// ReadIn and the caller's check would find, keeping none of the
// content. It returns the name of the file it read.
func checkBlobIn(fsys vfs.FS, prefix, hash string, want int64) (string, error) {
	f, name, compressed, err := openBlob(fsys, prefix, hash, HintNone)
	if err != nil {
		return name, err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return name, err
	}
	return name, checkOpen(f, fi.Size(), compressed, hash, want)
}

// checkOpen is checkBlobIn's check of f, the blob's file (compressed or
// not) of size bytes, open.
func checkOpen(f io.ReaderAt, size int64, compressed bool, hash string, want int64) error {
	var n int64
	var sum string
	var err error
	switch {
	case !compressed:
		if size != want {
			return blob.SizeMismatch(size, want)
		}
		n, sum, err = blob.HashReader(io.NewSectionReader(f, 0, size), want)
	default:
		if fcs, ok := zstContentSize(f, size); ok && fcs > want {
			return fmt.Errorf("its frame header records %d bytes, the reference says %d", fcs, want)
		}
		if want > size*PresizeRatio+64<<10 {
			// A claim its file does not justify: the one hashing decoder.
			n, sum, err = hashZst(f, size, want)
			break
		}
		dec := decoders.Get().(*zstd.Decoder)
		defer decoders.Put(dec)
		defer func() { _ = dec.Reset(nil) }() // drop the file
		if err := dec.Reset(io.NewSectionReader(f, 0, size)); err != nil {
			return err
		}
		n, sum, err = blob.HashReader(dec, want)
	}
	switch {
	case err != nil:
		return err
	case n > want:
		return blob.LongerThan(want)
	case n != want:
		return blob.SizeMismatch(n, want)
	case sum != hash:
		return blob.HashMismatch()
	}
	return nil
}

// Holds reports whether the blob of hash under prefix in fsys
// (openBlob) holds content: its size first (a raw file's, or what a
// compressed one's frame header records), then its bytes, compared with
// content as they are read (decoded), keeping none of them. It returns
// the name of the file the rule names ("" when there is none) and
// whether it holds content; a file it cannot read does not.
func Holds(fsys vfs.FS, prefix, hash string, content []byte) (string, bool) {
	f, name, compressed, err := openBlob(fsys, prefix, hash, HintNone)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false
	case err != nil:
		return name, false
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return name, false
	}
	want := int64(len(content))
	var r io.Reader = f
	if !compressed {
		if fi.Size() != want {
			return name, false
		}
	} else {
		if fcs, ok := zstContentSize(f, fi.Size()); ok && fcs != want {
			return name, false
		}
		dec := decoders.Get().(*zstd.Decoder)
		defer decoders.Put(dec)
		defer func() { _ = dec.Reset(nil) }() // drop the file
		if err := dec.Reset(io.NewSectionReader(f, 0, fi.Size())); err != nil {
			return name, false
		}
		r = dec
	}
	c := &compareWriter{want: content}
	if _, err := io.Copy(c, io.LimitReader(r, want+1)); err != nil {
		return name, false
	}
	return name, c.off == len(content)
}

// compareWriter compares what is written to it with want, from the
// start: a write that differs, or goes past want's end, fails.
type compareWriter struct {
	want []byte
	off  int
}

var errDiffers = errors.New("differs")

func (c *compareWriter) Write(p []byte) (int, error) {
	if len(p) > len(c.want)-c.off || !bytes.Equal(p, c.want[c.off:c.off+len(p)]) {
		return 0, errDiffers
	}
	c.off += len(p)
	return len(p), nil
}
