package jsonlstore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/session"
)

// healImage is an incompressible image (stored raw) and healText a text
// that compresses (stored as <hash>.zst), each above the blob threshold.
func healImage() []byte {
	r := rand.New(rand.NewPCG(25, 3))
	img := make([]byte, 1<<20)
	for i := range img {
		img[i] = byte(r.Uint32())
	}
	return img
}

var healText = strings.Repeat("the quick brown fox jumps over the lazy dog\n", 3000)

// healDamage damages the file at path as the cases do.
func healDamage(t *testing.T, path, damage string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	switch damage {
	case "half":
		data = data[:len(data)/2]
	case "empty":
		data = nil
	case "same length":
		r := rand.New(rand.NewPCG(uint64(len(data)), 7))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
	case "same length zstd": // a valid frame of other content, the file's length or about
		other := bytes.Repeat([]byte("other content "), len(data))
		enc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		data = enc.EncodeAll(other, nil)
		require.NoError(t, enc.Close())
	default:
		t.Fatalf("unknown damage %q", damage)
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
}

// TestAppendRewritesDamagedBlob: a blob file under its name that does not
// hold its content (cut to half, emptied, overwritten with other bytes of
// the same length, or replaced by a valid zstd frame of other content) is
// written again by the next writer that appends that content, before the
// record is acknowledged: the new revision loads, and so do the earlier
// ones that referenced the blob. Raw blobs (an image) and compressed ones
// (a text) alike.
func TestAppendRewritesDamagedBlob(t *testing.T) {
	ctx := context.Background()
	img := healImage()
	for _, kind := range []string{"raw", "compressed"} {
		for _, damage := range []string{"half", "empty", "same length", "same length zstd"} {
			t.Run(kind+"/"+damage, func(t *testing.T) {
				st := openTestStore(t) // verified at the end: the store is whole again
				const id = session.SessionID("heal")
				s := sessiontest.New(string(id))
				w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
				require.NoError(t, err)
				msg := func() session.Message {
					if kind == "raw" {
						m := session.TextMessage(session.RoleUser, "look", sessiontest.Epoch)
						m.Parts = append(m.Parts, session.Part{Type: session.PartImage, MediaType: "image/png", Data: img})
						return m
					}
					return session.TextMessage(session.RoleUser, healText, sessiontest.Epoch)
				}
				require.NoError(t, s.AppendMessage(msg()))
				_, err = w.Append(ctx, 1, sessiontest.Snap(t, s))
				require.NoError(t, err)
				require.NoError(t, w.Release(ctx))

				names, err := blobfile.Names(st.fs, id)
				require.NoError(t, err)
				require.Len(t, names, 1)
				require.Equal(t, kind == "compressed", strings.HasSuffix(names[0], blobfile.ZstSuffix), names[0])
				healDamage(t, filepath.Join(st.Dir(), string(id), BlobDir, names[0]), damage)
				_, err = st.Load(ctx, id)
				require.ErrorIs(t, err, ErrBlob, "the damage shows")

				// An agent appends the same content again, the whole of it in hand.
				w, err = st.Acquire(ctx, id, sessionstore.AcquireOptions{})
				require.NoError(t, err)
				require.NoError(t, s.AppendMessage(msg()))
				rev, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
				require.NoError(t, err)
				require.NoError(t, w.Release(ctx))

				rec, err := st.Load(ctx, id)
				require.NoError(t, err, "the acknowledged revision loads")
				require.Equal(t, rev, rec.Revision)
				require.Equal(t, sessiontest.Snap(t, s).Messages, rec.Snapshot.Messages)
				_, err = st.LoadRevision(ctx, id, rev-1)
				require.NoError(t, err, "and so does the revision that referenced the damaged blob")
				names, err = blobfile.Names(st.fs, id)
				require.NoError(t, err)
				require.Len(t, names, 1, "rewritten under its own name: %v", names)
			})
		}
	}
}

// TestBlobPlantedBesideRaw: readers and verify agree on which file is a
// blob (its raw file when there is one, else <hash>.zst): a valid zstd
// frame of other content planted as <hash>.zst beside an intact raw blob
// changes nothing for either; a raw file of other content planted beside
// an intact compressed blob is damage that both report.
func TestBlobPlantedBesideRaw(t *testing.T) {
	ctx := context.Background()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, enc.Close()) }()
	for _, tc := range []struct {
		name     string
		content  []byte // the blob's content: an image (raw) or a text (compressed)
		plant    func(hash string) (string, []byte)
		wantLoad bool
	}{
		{"zst beside raw", healImage(), func(hash string) (string, []byte) {
			return blobfile.Name(hash, true), enc.EncodeAll([]byte("planted content"), nil)
		}, true},
		{"raw beside zst", []byte(healText), func(hash string) (string, []byte) {
			return blobfile.Name(hash, false), []byte("planted content")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openUncheckedStore(t)
			const id = session.SessionID("plant")
			w, _ := blobSession(t, st, id, 1, func(int) string {
				if bytes.Equal(tc.content, []byte(healText)) {
					return healText
				}
				return "look"
			}, func(int) []byte {
				if bytes.Equal(tc.content, []byte(healText)) {
					return nil
				}
				return tc.content
			})
			require.NoError(t, w.Release(ctx))
			hash := blob.Hash(tc.content)
			name, data := tc.plant(hash)
			require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), string(id), BlobDir, name), data, 0o600))

			_, loadErr := st.Load(ctx, id)
			vr, err := st.Verify(ctx, id)
			require.NoError(t, err)
			_, histErr := st.LoadRevision(ctx, id, 2)
			if tc.wantLoad {
				require.NoError(t, loadErr)
				require.NoError(t, histErr)
				require.True(t, vr.OK(), "%+v", vr)
			} else {
				require.ErrorIs(t, loadErr, ErrBlob)
				require.ErrorIs(t, histErr, ErrBlob)
				require.False(t, vr.OK(), "verify reports what Load reports")
			}
		})
	}
}
