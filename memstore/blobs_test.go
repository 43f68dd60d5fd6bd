package memstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
)

// TestBlobThreshold: content at or above Options.BlobThreshold is kept
// out of line (BlobBytes), below it or with a negative threshold inline.
func TestBlobThreshold(t *testing.T) {
	tests := []struct {
		name      string
		threshold int
		size      int
		wantBlob  bool
	}{
		{"default, above", 0, sessionstore.DefaultBlobThreshold, true},
		{"default, below", 0, sessionstore.DefaultBlobThreshold - 1, false},
		{"small threshold", 1 << 10, 2 << 10, true},
		{"never", -1, 200 << 10, false}, // below a page (record.PageBytes)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t, memstore.Options{BlobThreshold: tt.threshold})
			text := strings.Repeat("x", tt.size)
			sess := sessiontest.New("a")
			require.NoError(t, sess.AppendMessage(session.TextMessage(session.RoleUser, text, sessiontest.Epoch)))
			w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
			du, err := s.DiskUsage(ctx)
			require.NoError(t, err)
			light, err := s.LoadWith(ctx, "a", sessionstore.LoadOptions{WithoutContent: true})
			require.NoError(t, err)
			part := light.Snapshot.Messages[0].Parts[0]
			if tt.wantBlob {
				require.Equal(t, int64(tt.size), du.Total.BlobBytes)
				require.Less(t, du.Total.LogBytes, int64(tt.size))
				require.NotNil(t, part.Ref)
			} else {
				require.Zero(t, du.Total.BlobBytes)
				require.Greater(t, du.Total.LogBytes, int64(tt.size))
				require.Equal(t, text, part.Text)
			}
			rec, err := s.Load(ctx, "a")
			require.NoError(t, err)
			require.Equal(t, text, rec.Snapshot.Messages[0].Parts[0].Text)
		})
	}
}

// TestAppendCostsWhatChanged: revisions are deltas, also the first append
// of a new holder: the records grow by about what changed, not by a
// snapshot per revision.
func TestAppendCostsWhatChanged(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, memstore.Options{})
	sess := sessiontest.New("a")
	for i := range 8 {
		require.NoError(t, sess.AppendMessage(session.TextMessage(session.RoleUser, strings.Repeat(fmt.Sprintf("message %d ", i), 400), sessiontest.Epoch)))
	}
	snap := sessiontest.Snap(t, sess)
	w, err := s.Create(ctx, snap, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	logBytes := func() int64 {
		du, err := s.DiskUsage(ctx, "a")
		require.NoError(t, err)
		return du.Total.LogBytes
	}
	full := logBytes()
	require.Greater(t, full, int64(8*4000))
	step := func(w sessionstore.Writer, title string) {
		before := logBytes()
		require.NoError(t, sess.SetTitle(title, session.TitleGenerated))
		_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, sess))
		require.NoError(t, err)
		require.Less(t, logBytes()-before, int64(1<<10), "a title change costs a delta")
	}
	step(w, "one")
	require.NoError(t, w.Release(ctx))
	w, err = s.Acquire(ctx, "a", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	step(w, "two")
	rec, err := s.Load(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "two", rec.Snapshot.Title)
	require.Len(t, rec.Snapshot.Messages, 8)
}
