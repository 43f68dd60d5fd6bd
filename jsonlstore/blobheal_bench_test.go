package jsonlstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
)

// BenchmarkBlobPutExisting is the writer's check of a blob it finds under
// its name (blobHolds: the size, then the bytes compared) against what it
// cost before (a stat) and against writing the blob anew, for a 1 MiB
// image (raw) and a 1 MiB text (compressed): what the first full record
// of a new holder pays for each blob it references again.
func BenchmarkBlobPutExisting(b *testing.B) {
	text := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", (1<<20)/44))
	for _, tc := range []struct {
		name    string
		content []byte
	}{{"blob=raw", healImage()}, {"blob=zst", text}} {
		st := openUncheckedStore(b)
		dir := st.fs
		require.NoError(b, dir.Mkdir("s", layout.DirPerm))
		w := blobfile.NewWriter(dir, "s", 1)
		hash := blob.Hash(tc.content)
		require.NoError(b, w.Put(hash, tc.content))
		require.NoError(b, w.Sync())
		b.Run(tc.name+"/op=check", func(b *testing.B) {
			b.SetBytes(int64(len(tc.content)))
			for b.Loop() {
				if _, ok := blobfile.Holds(dir, "s/"+BlobDir+"/", hash, tc.content); !ok {
					b.Fatal("the blob does not hold its content")
				}
			}
		})
		b.Run(tc.name+"/op=stat", func(b *testing.B) {
			b.SetBytes(int64(len(tc.content)))
			for b.Loop() {
				if _, _, err := blobfile.Size(dir, "s/"+BlobDir, hash); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/op=write", func(b *testing.B) {
			b.SetBytes(int64(len(tc.content)))
			for b.Loop() {
				require.NoError(b, dir.Mkdir("w", layout.DirPerm))
				w := blobfile.NewWriter(dir, "w", 1)
				require.NoError(b, w.Put(hash, tc.content))
				require.NoError(b, w.Sync())
				require.NoError(b, dir.RemoveAll("w"))
			}
		})
	}
}
