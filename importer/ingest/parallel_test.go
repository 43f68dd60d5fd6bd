package ingest_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer/ingest"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

// TestImportDeterministic imports the same sources (the real transcripts
// and a generated corpus) with one converter and with several, into
// stores with a fixed clock: the sessions' logs and blobs are the same
// bytes, and so are the reports (but for their times).
func TestImportDeterministic(t *testing.T) {
	gen := t.TempDir()
	_, err := importtest.WriteCorpus(gen, 24, 12)
	require.NoError(t, err)
	real := corpus(t)
	importAll := func(procs int) (string, []*ingest.Report) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dir := t.TempDir()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		st, err := jsonlstore.Open(dir, jsonlstore.Options{Now: func() time.Time { return at }})
		require.NoError(t, err)
		defer func() { require.NoError(t, st.Close()) }()
		var reps []*ingest.Report
		for _, tool := range []string{ingest.ClaudeCode, ingest.Codex} {
			rep := run(t, st, tool, []string{filepath.Join(gen, tool), real[tool]}, ingest.Options{})
			require.Zero(t, rep.Totals.Failed)
			rep.Elapsed = 0
			reps = append(reps, rep)
		}
		return dir, reps
	}
	oneDir, oneReps := importAll(1)
	manyDir, manyReps := importAll(4)
	require.Equal(t, oneReps, manyReps)
	one, many := storeFiles(t, oneDir), storeFiles(t, manyDir)
	require.NotEmpty(t, one)
	require.Equal(t, len(one), len(many))
	for name, data := range one {
		require.Equal(t, string(data), string(many[name]), "%s is the same with 1 converter and with 4", name)
	}
}

// storeFiles returns the content of every session log and blob under a
// file store's directory, by path within it (leases and summaries
// record who held what and when, not what was imported).
func storeFiles(t *testing.T, dir string) map[string][]byte {
	out := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() != "log.jsonl" && filepath.Base(filepath.Dir(p)) != "blobs" {
			return nil
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		rel, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		out[rel] = data
		return nil
	}))
	return out
}
