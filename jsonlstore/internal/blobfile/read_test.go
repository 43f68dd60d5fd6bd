package blobfile

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// TestReadExact: content of the expected size comes back in the buffer
// allocated for it (never grown and copied); shorter content comes back
// as it is; longer content up to the limit is read whole; one byte more
// than the limit is an error; whichever way the reader hands its bytes
// and its end over.
func TestReadExact(t *testing.T) {
	readers := map[string]func(io.Reader) io.Reader{
		"plain":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"data+EOF": iotest.DataErrReader,
		"half":     iotest.HalfReader,
	}
	cases := []struct {
		content     string
		size, limit int64
		want        string
		long        bool
	}{
		{"abcdef", 6, 6, "abcdef", false},
		{"abcdef", 6, 100, "abcdef", false},
		{"abc", 6, 6, "abc", false},
		{"", 6, 6, "", false},
		{"abcdefgh", 6, 8, "abcdefgh", false},
		{"abcdefgh", 6, 7, "", true},
		{"abcdefg", 6, 6, "", true},
		{"", 0, 0, "", false},
		{"a", 0, 0, "", true},
	}
	for name, wrap := range readers {
		for _, c := range cases {
			got, err := readExact(wrap(strings.NewReader(c.content)), c.size, c.limit)
			if c.long {
				require.Error(t, err, "%s: %+v", name, c)
				require.Contains(t, err.Error(), "more than", "%s: %+v", name, c)
				continue
			}
			require.NoError(t, err, "%s: %+v", name, c)
			require.Equal(t, c.want, string(got), "%s: %+v", name, c)
			if int64(len(c.content)) == c.size {
				require.EqualValues(t, c.size, cap(got), "%s: %+v: read into its own buffer", name, c)
			}
		}
	}
	_, err := readExact(iotest.ErrReader(io.ErrClosedPipe), 4, 4)
	require.ErrorIs(t, err, io.ErrClosedPipe)
	_, err = readExact(io.MultiReader(bytes.NewReader([]byte("abcd")), iotest.ErrReader(io.ErrClosedPipe)), 4, 8)
	require.ErrorIs(t, err, io.ErrClosedPipe, "an error after the expected bytes is reported")
}
