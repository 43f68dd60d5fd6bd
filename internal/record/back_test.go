package record

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r    *bytes.Reader
	read int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// TestBackReadsWhatTheLastRecordsTake: the latest record of a log of
// short records, and the few before it, cost a read of about what they
// take (firstChunk), not ScanChunk; a walk back over the whole log still
// finds every record, across the chunks' edges, and reads each byte
// about once.
func TestBackReadsWhatTheLastRecordsTake(t *testing.T) {
	const n = 400
	b := newLogBuilder(t, n).add(KindFull)
	for range n - 1 {
		b.add(KindDelta)
	}
	log := b.bytes()
	require.Greater(t, len(log), 2*ScanChunk, "the log spans several chunks")
	c := &countingReader{r: bytes.NewReader(log)}
	back := NewBack(c, int64(len(log)), "s", "log", 1<<20)
	last, _, err := back.Last()
	require.NoError(t, err)
	require.Equal(t, uint64(n), last.Rev)
	r := last
	for range 3 {
		r, err = back.Before(r)
		require.NoError(t, err)
	}
	require.Equal(t, uint64(n-3), r.Rev)
	require.LessOrEqual(t, c.read, int64(firstChunk), "the last four records are about 1 KiB")

	for want := uint64(n - 4); want > 0; want-- {
		r, err = back.Before(r)
		require.NoError(t, err)
		require.Equal(t, want, r.Rev)
		require.Equal(t, b.offset(int(want)), r.Offset)
		require.Equal(t, string(b.lines[want-1]), string(r.Line()))
	}
	r, err = back.Before(r)
	require.NoError(t, err)
	require.Nil(t, r, "revision 1 is the first")
	require.LessOrEqual(t, c.read, int64(len(log))+int64(len(log))/8, "each chunk read once, and the lines across their edges again")
}
