package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/compactcmd"
	"github.com/sessionstore/sessionstore/internal/testing/clitest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// binDir holds the compact binary, built once by TestMain.
var binDir string

func TestMain(m *testing.M) { clitest.Main(m, &binDir, ".") }

// The report's types, as the tests read --json.
type (
	report = compactcmd.Report
	result = compactcmd.Result
	totals = compactcmd.Totals
)

// ran is what one run of the command printed and returned.
type ran = clitest.Result

// compact runs the binary with args, a clean environment (no store
// variables; HOME in a temporary directory) plus env, and stdout and
// stderr piped.
func compact(t testing.TB, env []string, args ...string) ran {
	t.Helper()
	return clitest.Run(t, filepath.Join(binDir, "compact"), env, args...)
}

// inProcess runs the command in this process (so the race detector sees
// it), as main would.
func inProcess(args ...string) ran { return clitest.InProcess(run, args...) }

// testStore makes a store whose sessions have the given numbers of
// revisions and returns its root and every revision's encoded snapshot.
func testStore(t testing.TB, revisions map[string]int) (string, map[session.SessionID][]string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	// Full records only: the reports checked below cut exactly where the
	// policy says. With delta records a cut goes back to the full record
	// of the first kept revision's chain; jsonlstore's compaction tests
	// cover that.
	st, err := jsonlstore.Open(root, jsonlstore.Options{FullRecordsOnly: true})
	require.NoError(t, err)
	defer st.Close()
	want := map[session.SessionID][]string{}
	for name, n := range revisions {
		id := session.SessionID(name)
		s := sessiontest.New(name)
		var w sessionstore.Writer
		for rev := 1; rev <= n; rev++ {
			if rev > 1 {
				text := fmt.Sprintf("%s message %d %s", name, rev, strings.Repeat("word ", rev%50))
				require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, text, sessiontest.Epoch)))
			}
			snap, err := sessnap.Of(s)
			require.NoError(t, err)
			if rev == 1 {
				w, err = st.Create(ctx, snap, sessionstore.AcquireOptions{})
			} else {
				_, err = w.Append(ctx, uint64(rev-1), snap)
			}
			require.NoError(t, err)
			b, err := adapter.EncodeSnapshot(id, snap, 0)
			require.NoError(t, err)
			want[id] = append(want[id], string(b))
		}
		require.NoError(t, w.Release(ctx))
	}
	return root, want
}

// requireHistory checks that every session of root reads back whole: each
// revision, in order, the snapshot appended as it.
func requireHistory(t testing.TB, root string, want map[session.SessionID][]string) {
	t.Helper()
	ctx := context.Background()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	for id, revs := range want {
		n := 0
		for rec, err := range st.History(ctx, id) {
			require.NoError(t, err, "%s", id)
			require.Equal(t, uint64(n+1), rec.Revision, "%s", id)
			b, err := adapter.EncodeSnapshot(id, rec.Snapshot, 0)
			require.NoError(t, err)
			require.Equal(t, revs[n], string(b), "%s revision %d", id, n+1)
			n++
		}
		require.Equal(t, len(revs), n, "%s: every revision", id)
	}
}

// hashTree maps every path under root to a hash of its type, mode and
// content.
func hashTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h := sha256.New()
		_, _ = fmt.Fprintf(h, "%v %d|", fi.Mode(), fi.ModTime().UnixNano()) // hash.Hash writes never fail
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		out[p] = fmt.Sprintf("%x", h.Sum(nil))
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestDryRunChangesNothing(t *testing.T) {
	root, _ := testStore(t, map[string]int{"alpha": 40, "beta": 3, "gamma": 1})
	// A first compaction, so that archives exist too.
	require.Equal(t, 0, compact(t, nil, "--dir", root, "--keep-last", "20", "alpha").Code)
	before := hashTree(t, root)
	for _, args := range [][]string{
		{"--dir", root, "--dry-run", "--keep-last", "1"},
		{"--dir", root, "--dry-run", "--keep-since", "1h", "--json"},
		{"--dry-run", "--keep-last", "2", "alpha", "--dir", root},
	} {
		r := compact(t, nil, args...)
		require.Equal(t, 0, r.Code, "%v: %s", args, r.Stderr)
		require.Equal(t, before, hashTree(t, root), "compact %v changed the store", args)
	}
	r := compact(t, nil, "--dir", root, "--dry-run", "--keep-last", "1")
	require.Contains(t, r.Stdout, "would compact")
	require.Contains(t, r.Stdout, "dry run: nothing was written")
	require.Regexp(t, `alpha\s+19\s+40\s`, r.Stdout, "alpha would lose revisions 21-39")
}

func TestKeepLastKeepsEveryRevision(t *testing.T) {
	root, want := testStore(t, map[string]int{"alpha": 60, "beta": 7, "gamma": 1})
	r := compact(t, nil, "--dir", root, "--keep-last", "1")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Empty(t, r.Stderr, "nothing but the report when piped")
	require.Regexp(t, `alpha\s+59\s+60\s`, r.Stdout)
	require.Regexp(t, `beta\s+6\s+7\s`, r.Stdout)
	require.Contains(t, r.Stdout, "gamma")
	require.Contains(t, r.Stdout, "skipped: nothing to trim")
	require.Contains(t, r.Stdout, "3 sessions: 2 compacted, 1 skipped, 0 failed; 65 revisions trimmed")
	requireHistory(t, root, want)

	// Again: nothing left to trim, everything still there.
	r = compact(t, nil, "--dir", root, "--keep-last", "1")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "3 sessions: 0 compacted, 3 skipped")
	requireHistory(t, root, want)
}

func TestJSONReport(t *testing.T) {
	root, want := testStore(t, map[string]int{"alpha": 30, "beta": 5})
	var out report
	r := inProcess("--json", "--keep-last", "10", "--dir", root)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &out), r.Stdout)
	require.False(t, out.DryRun)
	require.Len(t, out.Sessions, 2)
	byID := map[session.SessionID]result{}
	for _, s := range out.Sessions {
		byID[s.ID] = s
	}
	require.Equal(t, int64(20), byID["alpha"].RevisionsTrimmed)
	require.Equal(t, uint64(21), byID["alpha"].FirstKept)
	require.Positive(t, byID["alpha"].ArchiveBytes)
	require.Less(t, byID["alpha"].LogBytesAfter, byID["alpha"].LogBytesBefore)
	require.Equal(t, "nothing to trim", byID["beta"].Skipped)
	require.Equal(t, totals{
		Sessions: 2, Compacted: 1, Skipped: 1, RevisionsTrimmed: 20,
		LogBytesBefore: byID["alpha"].LogBytesBefore, LogBytesAfter: byID["alpha"].LogBytesAfter, ArchiveBytes: byID["alpha"].ArchiveBytes,
	}, out.Totals)
	requireHistory(t, root, want)

	// The binary prints the same shape.
	r = compact(t, nil, "--json", "--keep-since", "1h", "--dir", root)
	require.Equal(t, 0, r.Code, r.Stderr)
	out = report{}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &out), r.Stdout)
	require.Equal(t, 2, out.Totals.Sessions)
}

func TestHeldSessionSkippedUnlessWait(t *testing.T) {
	ctx := context.Background()
	root, want := testStore(t, map[string]int{"held": 20, "free": 20})
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	w, err := st.Acquire(ctx, "held", sessionstore.AcquireOptions{Label: "agent"})
	require.NoError(t, err)

	r := compact(t, nil, "--dir", root, "--keep-last", "5", "--json")
	require.Equal(t, 0, r.Code, "a skipped session is not a failure: %s", r.Stderr)
	var out report
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &out))
	for _, s := range out.Sessions {
		switch s.ID {
		case "held":
			require.Contains(t, s.Skipped, "held", "the report says why")
			require.Zero(t, s.RevisionsTrimmed)
		case "free":
			require.Empty(t, s.Skipped)
			require.Equal(t, int64(15), s.RevisionsTrimmed)
		}
	}
	r = compact(t, nil, "--dir", root, "--keep-last", "5", "held")
	require.Contains(t, r.Stdout, "skipped:")
	require.Contains(t, r.Stdout, "agent", "the report names the holder")

	// With --wait, the command waits for the holder to let go.
	cmd := exec.Command(filepath.Join(binDir, "compact"), "--dir", root, "--keep-last", "5", "--wait", "30s", "--json", "held")
	cmd.Env = clitest.CleanEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	// Release once the command is waiting: its probe shows in lease.json
	// never (a waiter writes nothing), so wait for it to have listed.
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, cmd.Wait(), stderr.String())
	out = report{}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Len(t, out.Sessions, 1)
	require.Empty(t, out.Sessions[0].Skipped)
	require.Equal(t, int64(15), out.Sessions[0].RevisionsTrimmed)
	requireHistory(t, root, want)
}

func TestUsage(t *testing.T) {
	root, _ := testStore(t, map[string]int{"alpha": 3})
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no policy", []string{"--dir", root}, exitUsage, "say what to keep"},
		{"negative keep-last", []string{"--dir", root, "--keep-last", "-3"}, exitUsage, "--keep-last must be positive"},
		{"bad keep-since", []string{"--dir", root, "--keep-since", "soon"}, exitUsage, "not a duration"},
		{"negative keep-since", []string{"--dir", root, "--keep-since", "-1h"}, exitUsage, "--keep-since must be positive"},
		{"negative wait", []string{"--dir", root, "--keep-last", "1", "--wait", "-1s"}, exitUsage, "--wait must be positive"},
		{"unknown flag", []string{"--dir", root, "--keep-last", "1", "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{"bad ID", []string{"--dir", root, "--keep-last", "1", "../etc"}, exitUsage, "is not a session ID"},
		{"unknown session", []string{"--dir", root, "--keep-last", "1", "nosuch"}, exitFail, "not found"},
		{"no store", []string{"--dir", filepath.Join(root, "missing"), "--keep-last", "1"}, exitFail, "no store at"},
		{"store is a file", []string{"--dir", filepath.Join(root, "alpha", "log.jsonl"), "--keep-last", "1"}, exitFail, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := compact(t, nil, tc.args...)
			require.Equal(t, tc.wantCode, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			require.Contains(t, r.Stderr+r.Stdout, tc.wantErr)
			if tc.wantCode == exitUsage {
				require.Contains(t, r.Stderr, "Usage: compact", "usage on stderr")
				require.Empty(t, r.Stdout)
			}
		})
	}
	r := compact(t, nil, "--help")
	require.Equal(t, 0, r.Code)
	require.Contains(t, r.Stdout, "Usage: compact")
	require.Contains(t, r.Stdout, "--keep-since D")
	require.Empty(t, r.Stderr)

	// Days are a duration too.
	r = inProcess("--dir", root, "--keep-since", "7d", "--dry-run")
	require.Equal(t, 0, r.Code, r.Stderr)
}

func TestDefaultStore(t *testing.T) {
	root, _ := testStore(t, map[string]int{"alpha": 4})
	r := compact(t, []string{"SESSIONSTORE_DIR=" + root}, "--keep-last", "1")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "1 session: 1 compacted")
	xdg := t.TempDir()
	r = compact(t, []string{"XDG_DATA_HOME=" + xdg}, "--keep-last", "1")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "no store at "+filepath.Join(xdg, "sessionstore"))
	_, err := os.Stat(filepath.Join(xdg, "sessionstore"))
	require.ErrorIs(t, err, os.ErrNotExist, "compact creates no store")
}

// TestProgressBarOnTerminal runs the command with its output on a
// pseudo-terminal (util-linux script(1)): a progress bar shows while it
// works and is cleared before the report.
func TestProgressBarOnTerminal(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give the command a terminal")
	}
	root, want := testStore(t, map[string]int{"alpha": 30, "beta": 30})
	cmd := exec.Command(script, "-qec", filepath.Join(binDir, "compact")+" --dir "+root+" --keep-last 3", "/dev/null")
	cmd.Env = clitest.CleanEnv(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "compacting alpha", "the bar names the session it works on")
	require.Contains(t, string(out), "2 sessions: 2 compacted")
	requireHistory(t, root, want)
}
