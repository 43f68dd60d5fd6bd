package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// blobsOf is the BlobSource of session id in st.
func blobsOf(st sessionstore.Store, id session.SessionID) sessionstore.BlobSource {
	return func(ref session.ContentRef) ([]byte, error) {
		return st.ReadBlob(context.Background(), id, ref)
	}
}

// withBlobs is a released session of st holding, out of line, a
// compressible text and an incompressible image, each attached twice.
func withBlobs(t *testing.T, st *Store, id session.SessionID) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	img := make([]byte, 40<<10)
	for i := range img {
		img[i] = byte(r.Uint32())
	}
	text := strings.Repeat("a line of tool output\n", 2<<10)
	w, _ := blobSession(t, st, id, 4, func(i int) string {
		if i%2 == 0 {
			return text
		}
		return fmt.Sprintf("short %d", i)
	}, func(i int) []byte {
		if i%2 == 1 {
			return img
		}
		return nil
	})
	require.NoError(t, w.Release(context.Background()))
}

// TestImportCopiesBlobs: an import copies every blob its records
// reference, once, checked; a blob the source lacks or gives wrong is
// corruption at the first record that references it, and nothing is
// imported.
func TestImportCopiesBlobs(t *testing.T) {
	ctx := context.Background()
	src := openTestStore(t)
	const id = session.SessionID("blobs")
	withBlobs(t, src, id)
	lines := collectLines(t, src, id)
	srcNames, err := blobfile.Names(src.fs, id)
	require.NoError(t, err)
	require.Len(t, srcNames, 2, "a text (compressed) and an image (raw)")

	t.Run("copied", func(t *testing.T) {
		dst := openTestStore(t)
		var asked []string
		n, err := dst.Import(ctx, id, seqOf(lines), func(ref session.ContentRef) ([]byte, error) {
			asked = append(asked, ref.SHA256)
			return blobsOf(src, id)(ref)
		})
		require.NoError(t, err)
		require.Equal(t, len(lines), n)
		require.Len(t, asked, 2, "each blob is read once")
		require.Equal(t, lines, collectLines(t, dst, id))
		names, err := blobfile.Names(dst.fs, id)
		require.NoError(t, err)
		require.Equal(t, srcNames, names, "the same blobs, compressed alike")
		want, err := src.Load(ctx, id)
		require.NoError(t, err)
		got, err := dst.Load(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want.Snapshot, got.Snapshot)
	})

	// The record that first references each blob: revision 2 (the text)
	// and 3 (the image).
	first := map[string]uint64{}
	for rec, err := range src.History(ctx, id) {
		require.NoError(t, err)
		light, err := src.LoadWith(ctx, id, sessionstore.LoadOptions{Revision: rec.Revision, WithoutContent: true})
		require.NoError(t, err)
		light.Snapshot.Messages.Refs(func(ref session.ContentRef) {
			if _, ok := first[ref.SHA256]; !ok {
				first[ref.SHA256] = rec.Revision
			}
		})
	}
	require.Len(t, first, 2)
	for hash, rev := range first {
		for _, tc := range []struct {
			name string
			src  sessionstore.BlobSource
		}{
			{"missing", func(ref session.ContentRef) ([]byte, error) {
				if ref.SHA256 == hash {
					return nil, fmt.Errorf("%w: gone", sessionstore.ErrNotFound)
				}
				return blobsOf(src, id)(ref)
			}},
			{"wrong content", func(ref session.ContentRef) ([]byte, error) {
				b, err := blobsOf(src, id)(ref)
				if ref.SHA256 == hash && err == nil {
					b[0] ^= 1
				}
				return b, err
			}},
		} {
			t.Run(fmt.Sprintf("%s at revision %d", tc.name, rev), func(t *testing.T) {
				dst := openTestStore(t)
				_, err := dst.Import(ctx, id, seqOf(lines), tc.src)
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
				require.ErrorIs(t, err, ErrBlob)
				require.NotErrorIs(t, err, sessionstore.ErrNotFound, "the source's missing content is not a missing session")
				require.Equal(t, rev, ce.Revision)
				require.Equal(t, layout.LogPath(id), ce.Path)
				requireNoSession(t, dst, id)
			})
		}
	}

	t.Run("no source", func(t *testing.T) {
		dst := openTestStore(t)
		_, err := dst.Import(ctx, id, seqOf(lines), nil)
		var ce *sessionstore.CorruptionError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, uint64(2), ce.Revision, "the first record that references a blob")
		requireNoSession(t, dst, id)
	})
	t.Run("source error", func(t *testing.T) {
		dst := openTestStore(t)
		boom := errors.New("connection reset")
		_, err := dst.Import(ctx, id, seqOf(lines), func(session.ContentRef) ([]byte, error) { return nil, boom })
		require.ErrorIs(t, err, boom)
		require.NotErrorIs(t, err, sessionstore.ErrCorrupt, "the source's failure is not corruption")
		requireNoSession(t, dst, id)
	})
}

// TestReadBlob: ReadBlob gives a blob's content (raw or compressed),
// checked; a blob the session lacks is ErrNotFound, a damaged one
// corruption naming its file.
func TestReadBlob(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t)
	const id = session.SessionID("read")
	withBlobs(t, st, id)
	rec, err := st.LoadWith(ctx, id, sessionstore.LoadOptions{WithoutContent: true})
	require.NoError(t, err)
	full, err := st.Load(ctx, id)
	require.NoError(t, err)
	var refs []session.ContentRef
	rec.Snapshot.Messages.Refs(func(ref session.ContentRef) { refs = append(refs, ref) })
	require.Len(t, refs, 4)
	for i, ref := range refs[:2] { // the text, then the image
		b, err := st.ReadBlob(ctx, id, ref)
		require.NoError(t, err)
		require.NoError(t, blob.Check(ref, b))
		if i == 0 {
			require.Equal(t, full.Snapshot.Messages[0].Parts[0].Text, string(b))
		} else {
			require.Equal(t, full.Snapshot.Messages[1].Parts[1].Data, b)
		}
	}

	other := refs[0]
	other.SHA256 = strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		id   session.SessionID
		ref  session.ContentRef
		want error
	}{
		{"unknown content", id, other, sessionstore.ErrNotFound},
		{"not a hash", id, session.ContentRef{SHA256: "../log.jsonl", Size: 1}, sessionstore.ErrNotFound},
		{"unknown session", "nosuch", refs[0], sessionstore.ErrNotFound},
		{"invalid id", "../x", refs[0], sessionstore.ErrInvalidID},
	} {
		_, err := st.ReadBlob(ctx, tc.id, tc.ref)
		require.ErrorIs(t, err, tc.want, tc.name)
	}

	// Damage: the image's file (raw) loses a byte.
	name := blobfile.Dir(id) + "/" + blobfile.Name(refs[1].SHA256, false)
	data, err := os.ReadFile(st.Dir() + "/" + name)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(st.Dir()+"/"+name, data[1:], 0o600))
	_, err = st.ReadBlob(ctx, id, refs[1])
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrBlob)
	require.Equal(t, name, ce.Path)
}

// TestAppendChecksReferences: a part that arrives as a reference must
// name a blob of the session with its size, compressed or not, also for
// the first append of a new holder (which checks what it has not seen).
func TestAppendChecksReferences(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	const id = session.SessionID("refs")
	withBlobs(t, st, id)
	light, err := st.LoadWith(ctx, id, sessionstore.LoadOptions{WithoutContent: true})
	require.NoError(t, err)
	s, err := light.Session()
	require.NoError(t, err)
	w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer func() { _ = w.Release(ctx) }()
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "more", sessiontest.Epoch)))
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err, "references to the session's blobs, raw and compressed")

	// A wrong size of a compressed blob (the text) is refused.
	var text session.ContentRef
	light.Snapshot.Messages.Refs(func(ref session.ContentRef) {
		if ref.Field == session.ContentText && text.SHA256 == "" {
			text = ref
		}
	})
	_, err = os.Stat(st.Dir() + "/" + blobfile.Dir(id) + "/" + blobfile.Name(text.SHA256, true))
	require.NoError(t, err, "the text is stored compressed")
	text.Size--
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartText, Ref: &text}}}))
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
}
