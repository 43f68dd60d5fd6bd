package jsonlstore

// Helpers shared by the tests of the tool functions (Verify, Repair,
// DiskUsage, Export, Records). Names start with "tool" so that they never
// collide with other tests' helpers.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// toolFixture returns the committed log of testdata/jsonlstore/<name>.
func toolFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureRoot, name, LogFile))
	require.NoError(t, err)
	return data
}

// toolFixtureNames lists every committed fixture.
func toolFixtureNames(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(fixtureRoot)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// toolStore opens a store in a new temporary root holding a copy of each
// named fixture as a session of the same name.
func toolStore(t testing.TB, opts Options, fixtures ...string) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	for _, name := range fixtures {
		// The whole fixture: its log, and for format 4 its blobs and
		// settings.
		require.NoError(t, os.CopyFS(filepath.Join(root, name), os.DirFS(filepath.Join(fixtureRoot, name))))
	}
	st, err := Open(root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st, root
}

// toolLineOffset is the offset of line i (from 0) of data.
func toolLineOffset(data []byte, i int) int64 {
	var off int64
	for range i {
		j := bytes.IndexByte(data[off:], '\n')
		if j < 0 {
			return int64(len(data))
		}
		off += int64(j) + 1
	}
	return off
}

// toolSession creates session id with n revisions (one message each after
// the first) and releases it, returning its log's path.
func toolSession(t testing.TB, st *Store, id session.SessionID, n int) string {
	t.Helper()
	ctx := context.Background()
	s := sessiontest.New(string(id))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{Label: "tool-test"})
	require.NoError(t, err)
	for r := 2; r <= n; r++ {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("message %d", r), sessiontest.Epoch)))
		_, err := w.Append(ctx, uint64(r-1), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	return filepath.Join(st.Dir(), string(id), LogFile)
}

// toolFlip flips one bit of the file at off.
func toolFlip(t testing.TB, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[off] ^= 0x04
	require.NoError(t, os.WriteFile(path, data, 0o600))
}
