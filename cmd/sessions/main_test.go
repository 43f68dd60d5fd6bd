package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/clitest"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// binDir holds the sessions and compact binaries, built once by TestMain.
var binDir string

const fixtureRoot = "../../testdata/jsonlstore"

func TestMain(m *testing.M) {
	flag.Parse()
	// PostgreSQL (for the migrate and DSN tests) starts on first use and
	// stops after the tests.
	os.Exit(pgtest.Run(func() int { return clitest.RunTests(m, &binDir, ".", "../compact") }))
}

// result is what one run of a command printed and returned.
type result = clitest.Result

// sessions runs the sessions binary with args and a clean environment (no
// store variables; HOME in a temporary directory), plus env.
func sessions(t testing.TB, env []string, args ...string) result {
	t.Helper()
	return clitest.Run(t, filepath.Join(binDir, "sessions"), env, args...)
}

// compactCmd runs the compact binary like sessions.
func compactCmd(t testing.TB, env []string, args ...string) result {
	t.Helper()
	return clitest.Run(t, filepath.Join(binDir, "compact"), env, args...)
}

// inProcess runs the command in this process (so the race detector sees
// it), as main would.
func inProcess(t testing.TB, args ...string) result {
	t.Helper()
	return clitest.InProcess(run, args...)
}

// fixtureStore returns a new store root holding a copy of each named
// fixture of testdata/jsonlstore (all of them when none is named).
// format2Fixtures are the fixtures with delta records (log format 2),
// added after the goldens of "every fixture" were recorded: those goldens
// cover the format 1 fixtures, and TestGoldenDeltas these.
var format2Fixtures = []string{"deltas", "v1-then-v2", "delta-bad-middle", "delta-bad-last", "delta-base-damaged", "delta-first-record"}

func fixtureStore(t testing.TB, names ...string) string {
	t.Helper()
	if len(names) == 0 {
		entries, err := os.ReadDir(fixtureRoot)
		require.NoError(t, err)
		for _, e := range entries {
			if !slices.Contains(format2Fixtures, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	root := t.TempDir()
	for _, name := range names {
		// The whole fixture: its log, and for format 4 its blobs and
		// settings.
		require.NoError(t, os.CopyFS(filepath.Join(root, name), os.DirFS(filepath.Join(fixtureRoot, name))))
	}
	return root
}

// golden compares got with testdata/golden/name, or rewrites it with
// -update. Paths of temporary directories, this process's pid and the host
// name are replaced by placeholders first.
func golden(t testing.TB, name string, got string, scrub ...string) {
	t.Helper()
	for i := 0; i+1 < len(scrub); i += 2 {
		got = strings.ReplaceAll(got, scrub[i], scrub[i+1])
	}
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test -run %s -update", t.Name())
	require.Equal(t, string(want), got, "golden %s (go test -update rewrites it)", path)
}

// hostPID are scrub pairs for the identity of this process in lease
// columns.
func hostPID() []string {
	host, _ := os.Hostname()
	return []string{" pid " + strconv.Itoa(os.Getpid()) + " on " + host, " pid PID on HOST"}
}

// goldenEpoch is the clock of the golden stores: each reading is one
// second after the previous.
func goldenClock() func() time.Time {
	t := sessiontest.Epoch
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// writeSession creates session s in st, appends extra revisions of it,
// and releases it.
func writeSession(t testing.TB, st *jsonlstore.Store, s *session.Session, extra int) {
	t.Helper()
	ctx := context.Background()
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "golden"})
	require.NoError(t, err)
	for i := range extra {
		_, err := w.Append(ctx, uint64(i+1), snap)
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
}
