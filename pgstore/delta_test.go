package pgstore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
)

// importFixture imports the record lines of a committed jsonlstore
// fixture into a new session of the same name and returns the lines.
func importFixture(t *testing.T, s *pgstore.Store, name string) ([][]byte, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "jsonlstore", name, "log.jsonl"))
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last newline
	n, err := s.Import(t.Context(), session.SessionID(name), func(yield func([]byte, error) bool) {
		for _, l := range lines {
			if !yield(l, nil) {
				return
			}
		}
	}, nil)
	if err == nil {
		require.Equal(t, len(lines), n)
	}
	return lines, err
}

// TestDeltaRecords: delta records (format 2) copied in verbatim load, by
// revision and as history; an import holding a delta that does not apply
// is refused as corruption at its revision.
func TestDeltaRecords(t *testing.T) {
	ctx := t.Context()
	s := openDSN(t, newDSN(t), pgstore.Options{})
	lines, err := importFixture(t, s, "deltas")
	require.NoError(t, err)

	var history []sessionstore.Record
	for rec, err := range s.History(ctx, "deltas") {
		require.NoError(t, err)
		history = append(history, rec)
	}
	require.Len(t, history, len(lines))
	latest, err := s.Load(ctx, "deltas")
	require.NoError(t, err)
	require.Equal(t, history[len(history)-1], latest)
	for _, want := range history {
		got, err := s.LoadRevision(ctx, "deltas", want.Revision)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	// Each revision's snapshot holds one more message than the one before:
	// the deltas rebuilt the growing conversation.
	for i := 1; i < len(history); i++ {
		require.Len(t, history[i].Snapshot.Messages, len(history[i-1].Snapshot.Messages)+1, "revision %d", history[i].Revision)
	}

	// A delta that does not apply to its base is corruption at its
	// revision, and the import writes nothing.
	bad, err := importFixture(t, s, "delta-bad-last")
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, uint64(len(bad)), ce.Revision)
	_, err = s.Load(ctx, "delta-bad-last")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}

// copyFixture copies the committed jsonlstore fixture name into a store
// root of its own and opens it: the source of its record lines and blobs.
func copyFixture(t *testing.T, name string) *jsonlstore.Store {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(root, name), os.DirFS(filepath.Join("..", "testdata", "jsonlstore", name))))
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestFormat4Fixtures: sessions of record format 4 as the file store
// writes them — content kept out of line, a conversation in pages — import
// with their blobs and read back as the file store reads them; one whose
// blob is missing imports nothing.
func TestFormat4Fixtures(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, pgstore.Options{})
	for _, name := range []string{"v4-blobs", "v4-pages"} {
		t.Run(name, func(t *testing.T) {
			src := copyFixture(t, name)
			id := session.SessionID(name)
			n, err := s.Import(ctx, id, src.RecordLines(ctx, id), func(ref session.ContentRef) ([]byte, error) {
				return src.ReadBlob(ctx, id, ref)
			})
			require.NoError(t, err)
			require.Positive(t, n)
			for rec, err := range src.History(ctx, id) {
				require.NoError(t, err)
				got, err := s.LoadRevision(ctx, id, rec.Revision)
				require.NoError(t, err)
				require.Equal(t, rec.Snapshot, got.Snapshot, "revision %d", rec.Revision)
			}
			var a, b strings.Builder
			require.NoError(t, src.Export(ctx, id, &a, false))
			require.NoError(t, s.Export(ctx, id, &b, false))
			require.Equal(t, a.String(), b.String())
			rep, err := s.Verify(ctx, id)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%+v", rep)
		})
	}
	src := copyFixture(t, "v4-blob-missing")
	_, err := s.Import(ctx, "v4-blob-missing", src.RecordLines(ctx, "v4-blob-missing"), func(ref session.ContentRef) ([]byte, error) {
		return src.ReadBlob(ctx, "v4-blob-missing", ref)
	})
	require.ErrorIs(t, err, sessionstore.ErrCorrupt)
	_, err = s.Load(ctx, "v4-blob-missing")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}
