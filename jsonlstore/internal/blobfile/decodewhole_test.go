package blobfile

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/blob"
)

// TestReadZstOnePass: a justified compressed blob is decoded into one
// buffer of its size (its capacity is the content's: never grown), and
// the read allocates little beyond the file and the content; a frame
// that decodes past the reference's size fails as longer, and content
// shorter than the reference comes back short (the caller reports it).
func TestReadZstOnePass(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	content := []byte(strings.Repeat("tool output line, with some words in it\n", 1<<15)) // 1.25 MiB
	frame := enc.EncodeAll(content, nil)
	hash := blob.Hash(content)
	n := int64(len(content))

	// The measured read finds the decoder and buffer the warm-up left in
	// their pools: no collection between them (one empties the pools) and
	// one P (a pool's last Put sits in its P's private slot, which a Get
	// on another P does not see; it would count a new decoder as the
	// read's cost).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range 3 { // the decoders' pool warm: what one read costs
		_, err := ReadZst(bytes.NewReader(frame), int64(len(frame)), hash, n)
		require.NoError(t, err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := ReadZst(bytes.NewReader(frame), int64(len(frame)), hash, n)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, content, got)
	require.LessOrEqual(t, int64(cap(got)), n+decodeSlack, "decoded into a buffer of its size (and the decoder's slack)")
	alloc := after.TotalAlloc - before.TotalAlloc
	if !raceEnabled {
		require.LessOrEqual(t, alloc, uint64(n)+uint64(len(frame))+64<<10, "the content, the file and little else")
	}

	// Longer than the reference: refused unread by its frame header.
	_, err = ReadZst(bytes.NewReader(frame), int64(len(frame)), hash, n-1)
	require.ErrorContains(t, err, "the reference says")
	// A frame without a content size, longer than the reference: refused,
	// decoding no further.
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithSingleSegment(false))
	require.NoError(t, err)
	_, err = w.Write(content)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, err = ReadZst(bytes.NewReader(buf.Bytes()), int64(buf.Len()), hash, n/2)
	require.ErrorContains(t, err, "more than")
	got, err = ReadZst(bytes.NewReader(buf.Bytes()), int64(buf.Len()), hash, n)
	require.NoError(t, err)
	require.Equal(t, content, got)
	// Two frames, the first recording its size: read whole when any size
	// may be read.
	two := append(enc.EncodeAll(content[:n/2], nil), enc.EncodeAll(content[n/2:], nil)...)
	got, err = ReadZst(bytes.NewReader(two), int64(len(two)), hash, SizeAny)
	require.NoError(t, err)
	require.Equal(t, content, got)
	got, err = ReadZst(bytes.NewReader(two), int64(len(two)), hash, n)
	require.NoError(t, err)
	require.Equal(t, content, got)
}
