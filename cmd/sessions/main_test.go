package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// bin is the sessions binary, built once by TestMain.
var bin string

const fixtureRoot = "../../testdata/jsonlstore"

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "sessions-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "sessions")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sessions: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the command printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// String is the golden form: stdout, stderr if any, and the exit status.
func (r result) String() string {
	s := r.stdout
	if r.stderr != "" {
		s += "--- stderr ---\n" + r.stderr
	}
	return s + fmt.Sprintf("--- exit %d ---\n", r.code)
}

// sessions runs the binary with args and a clean environment (no store
// variables; HOME in a temporary directory), plus env.
func sessions(t testing.TB, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv(t), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run sessions %v: %v", args, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func cleanEnv(t testing.TB) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SESSIONSTORE_DIR", "XDG_DATA_HOME", "HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+t.TempDir())
}

// inProcess runs the command in this process (so the race detector sees
// it), as main would.
func inProcess(t testing.TB, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
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
		data, err := os.ReadFile(filepath.Join(fixtureRoot, name, jsonlstore.LogFile))
		require.NoError(t, err)
		require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(root, name, jsonlstore.LogFile), data, 0o600))
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
