package jsonlstore

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
)

// The blob reader's size handling under hostile input: a blob file of any
// bytes, stored raw or compressed, behind a reference that claims any
// size. Whatever they hold, reading never panics; content it returns is
// never longer than the claim (a raw blob's is its file, of exactly the
// claimed size); and what it allocates follows the file,
// never the claim: at most blobPresizeRatio times the file (or the file,
// raw), the content it returns, and a decoder's window.

// blobReadAllocBound bounds what one read of a blob file of n bytes may
// allocate besides the content it returns, whatever the reference claims:
// the file held to be decoded in one pass, a buffer the file justifies,
// and a decoder's window for each of the two passes of a read the file
// does not justify (a frame's window is at most archive.Window; the
// hashing decoder's is allocated once per process, a pooled decoder's
// again after a collection).
func blobReadAllocBound(n int) uint64 {
	return uint64(n)*(blobfile.PresizeRatio+1) + 64<<10 + 2*archive.Window + 2<<20
}

func FuzzBlobRead(f *testing.F) {
	enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(1<<20))
	require.NoError(f, err)
	text := bytes.Repeat([]byte("a line of text, "), 4096)
	zeros := make([]byte, 8<<20)
	for _, seed := range []struct {
		data       []byte
		compressed bool
		claim      int64
	}{
		{text, false, int64(len(text))},
		{text, false, 16 << 30},
		{enc.EncodeAll(text, nil), true, int64(len(text))},
		{enc.EncodeAll(text, nil), true, 16 << 30},
		{enc.EncodeAll(text, nil), true, blobfile.SizeAny},
		{enc.EncodeAll(text, nil), true, blobfile.SizeJustified},
		{enc.EncodeAll(zeros, nil), true, int64(len(zeros))},
		{enc.EncodeAll(zeros, nil), true, blobfile.MaxBytes},
		{enc.EncodeAll(zeros, nil), true, blobfile.SizeAny},
		{enc.EncodeAll(zeros, nil)[:40], true, int64(len(zeros))},
		{nil, true, 0},
		{nil, false, 1},
	} {
		f.Add(seed.data, seed.compressed, seed.claim)
	}
	require.NoError(f, enc.Close())
	f.Fuzz(func(t *testing.T, data []byte, compressed bool, claim int64) {
		if claim < blobfile.SizeJustified || claim > blobfile.MaxBytes {
			claim %= blobfile.MaxBytes + 1 // readBlobVia refuses other claims before reading
			if claim < blobfile.SizeJustified {
				claim = -claim
			}
		}
		// The name is the SHA-256 of what the bytes decode to, when they
		// do, so that the two-pass path can succeed.
		hash := blob.Hash(data)
		if compressed {
			if dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(archive.Window), zstd.WithDecoderMaxMemory(64<<20)); err == nil {
				if content, err := dec.DecodeAll(data, nil); err == nil {
					hash = blob.Hash(content)
				}
				dec.Close()
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var content []byte
		if compressed {
			content, err = blobfile.ReadZst(bytes.NewReader(data), int64(len(data)), hash, claim)
		} else {
			content, err = blobfile.ReadRaw(bytes.NewReader(data), int64(len(data)), claim)
		}
		runtime.ReadMemStats(&after)
		// Under the race detector sync.Pool drops decoders at random, so
		// each read may build new ones: what it allocates is not the
		// reader's.
		if alloc := after.TotalAlloc - before.TotalAlloc; !raceEnabled {
			require.LessOrEqual(t, alloc, blobReadAllocBound(len(data))+uint64(len(content)),
				"a read of a %d-byte file claiming %d allocated %d bytes", len(data), claim, alloc)
		}
		if err != nil {
			require.Nil(t, content)
			return
		}
		if claim >= 0 {
			require.LessOrEqual(t, int64(len(content)), claim, "longer than the claim")
		}
		if !compressed {
			require.Equal(t, data, content, "a raw blob is its file")
			if claim >= 0 {
				require.Equal(t, claim, int64(len(content)))
			}
		}
	})
}
