package pgstore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
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
