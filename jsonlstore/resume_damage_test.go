package jsonlstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/session"
)

// TestResumeDamagedBlob: Resume reads the latest revision's blobs while
// recovery decodes it; a blob that does not hold its content fails the
// resume as it fails Acquire's Latest (ErrBlob), and leaves no lease.
func TestResumeDamagedBlob(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t)
	const id = session.SessionID("resume-damage")
	s := sessiontest.New(string(id))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, healText, sessiontest.Epoch)))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))

	w, rec, err := sessionstore.Resume(ctx, st, id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Equal(t, sessiontest.Snap(t, s).Messages, rec.Snapshot.Messages, "Resume returns the content")
	require.NoError(t, w.Release(ctx))

	names, err := blobfile.Names(st.fs, id)
	require.NoError(t, err)
	require.Len(t, names, 1)
	healDamage(t, filepath.Join(st.Dir(), string(id), BlobDir, names[0]), "half")

	_, _, err = sessionstore.Resume(ctx, st, id, sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, ErrBlob)
	w, err = st.Acquire(ctx, id, sessionstore.AcquireOptions{})
	require.NoError(t, err, "the failed resume left no lease")
	_, err = w.Latest(ctx)
	require.ErrorIs(t, err, ErrBlob, "Acquire's Latest reports the same damage")
	require.NoError(t, w.Release(ctx))
}
