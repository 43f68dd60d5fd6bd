//go:build unix

package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/ingest"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/internal/testing/unprivtest"
	"github.com/sessionstore/sessionstore/summary"
)

// The permission tests prove nothing as root, which CI runs as:
// TestPermissionTestsUnprivileged runs them again as nobody.
func TestPermissionTestsUnprivileged(t *testing.T) {
	unprivtest.Run(t, unprivtest.Nobody, nil, "TestRunGoesOnPastUnreadableDirectories")
}

// ignoredReasons maps each path a report passed over, relative to dir,
// to its reason.
func ignoredReasons(t *testing.T, rep *ingest.Report, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ig := range rep.Ignored {
		rel, err := filepath.Rel(dir, ig.Path)
		require.NoError(t, err)
		out[filepath.ToSlash(rel)] = ig.Reason
	}
	return out
}

// mkfifo makes a named pipe at p: opening it for reading blocks until a
// writer comes, and none ever does.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, syscall.Mkfifo(p, 0o600))
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.Symlink(target, p))
}

// TestRunPassesOverWhatIsNotASource: a Claude Code projects directory
// and a Codex sessions directory holding, beside one real source each,
// named pipes, links to /dev/zero and links to sources and directories
// outside them, each named as a source. The import ends (a pipe opened
// to be read blocked it for ever, /dev/zero was read for ever), imports
// the one source, reads nothing outside the directory named, and reports
// each path it passed over.
func TestRunPassesOverWhatIsNotASource(t *testing.T) {
	t.Run("claude-code", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "projects")
		id, data := importtest.GenerateClaudeCode(1, 20<<10)
		writeFile(t, filepath.Join(dir, "-src-app", id+".jsonl"), data)
		otherID, other := importtest.GenerateClaudeCode(2, 20<<10)
		writeFile(t, filepath.Join(base, "outside", "-src-lib", otherID+".jsonl"), other)
		mkfifo(t, filepath.Join(dir, "-src-app", "fifo.jsonl"))
		mkfifo(t, filepath.Join(dir, "top.jsonl"))
		mkfifo(t, filepath.Join(dir, "-src-app", id, "subagents", "agent-a1.jsonl"))
		symlink(t, "/dev/zero", filepath.Join(dir, "-src-app", "zero.jsonl"))
		symlink(t, filepath.Join(base, "outside", "-src-lib", otherID+".jsonl"), filepath.Join(dir, "-src-app", "out.jsonl"))
		symlink(t, filepath.Join(base, "outside", "-src-lib"), filepath.Join(dir, "-src-lib"))

		st := newStore(t)
		rep := run(t, st, ingest.ClaudeCode, []string{dir}, ingest.Options{})
		require.Equal(t, 1, rep.Totals.Sources, "%+v", rep.Sources)
		require.Equal(t, 1, rep.Totals.Read)
		require.Equal(t, filepath.Join(dir, "-src-app", id+".jsonl"), rep.Sources[0].Path)
		require.Equal(t, []string{"claude-code-" + id}, sessionIDs(t, st))
		require.Equal(t, map[string]string{
			"top.jsonl":           "not a regular file: a named pipe",
			"-src-app/fifo.jsonl": "not a regular file: a named pipe",
			"-src-app/zero.jsonl": "a symbolic link: links are not followed",
			"-src-app/out.jsonl":  "a symbolic link: links are not followed",
			"-src-lib":            "a symbolic link: links are not followed",
		}, ignoredReasons(t, rep, dir))

		// A pipe named as the transcript to import is refused at once.
		_, err := ingest.Run(context.Background(), st, ingest.ClaudeCode, []string{filepath.Join(dir, "-src-app", "fifo.jsonl")}, ingest.Options{})
		require.ErrorIs(t, err, importer.ErrNotRegular)
		_, err = ingest.Run(context.Background(), st, ingest.ClaudeCode, []string{filepath.Join(dir, "-src-app", "zero.jsonl")}, ingest.Options{})
		require.ErrorIs(t, err, importer.ErrNotRegular)
	})
	t.Run("codex", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "sessions")
		thread, name, data := importtest.GenerateCodex(1, 20<<10)
		writeFile(t, filepath.Join(dir, "2026", "05", "11", name), data)
		_, otherName, other := importtest.GenerateCodex(2, 20<<10)
		writeFile(t, filepath.Join(base, "outside", otherName), other)
		mkfifo(t, filepath.Join(dir, "2026", "05", "11", "rollout-fifo.jsonl"))
		symlink(t, "/dev/zero", filepath.Join(dir, "2026", "05", "11", "rollout-zero.jsonl"))
		symlink(t, filepath.Join(base, "outside", otherName), filepath.Join(dir, "2026", "05", "11", "rollout-out.jsonl"))
		symlink(t, filepath.Join(base, "outside"), filepath.Join(dir, "2026", "05", "12"))

		st := newStore(t)
		rep := run(t, st, ingest.Codex, []string{dir}, ingest.Options{})
		require.Equal(t, 1, rep.Totals.Sources, "%+v", rep.Sources)
		require.Equal(t, 1, rep.Totals.Read)
		require.Equal(t, []string{"codex-" + thread}, sessionIDs(t, st))
		require.Equal(t, map[string]string{
			"2026/05/11/rollout-fifo.jsonl": "not a regular file: a named pipe",
			"2026/05/11/rollout-zero.jsonl": "a symbolic link: links are not followed",
			"2026/05/11/rollout-out.jsonl":  "a symbolic link: links are not followed",
			"2026/05/12":                    "a symbolic link: links are not followed",
		}, ignoredReasons(t, rep, dir))
	})
}

// sessionIDs lists the sessions of st.
func sessionIDs(t *testing.T, st sessionstore.Store) []string {
	t.Helper()
	page, err := st.List(context.Background(), summary.Query{Limit: summary.MaxLimit})
	require.NoError(t, err)
	var out []string
	for _, it := range page.Items {
		out = append(out, string(it.ID))
	}
	return out
}

// TestRunGoesOnPastUnreadableDirectories: a project directory, and a
// Codex day directory, that the user may not read are reported and
// passed over; the sources beside them are imported. Meaningful only
// unprivileged (TestPermissionTestsUnprivileged).
func TestRunGoesOnPastUnreadableDirectories(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory; TestPermissionTestsUnprivileged runs this as nobody")
	}
	base := t.TempDir()
	claude := filepath.Join(base, "projects")
	id, data := importtest.GenerateClaudeCode(1, 20<<10)
	writeFile(t, filepath.Join(claude, "-src-b", id+".jsonl"), data)
	otherID, other := importtest.GenerateClaudeCode(2, 20<<10)
	writeFile(t, filepath.Join(claude, "-src-a", otherID+".jsonl"), other)
	codexDir := filepath.Join(base, "sessions")
	thread, name, cdata := importtest.GenerateCodex(1, 20<<10)
	writeFile(t, filepath.Join(codexDir, "2026", "05", "12", name), cdata)
	_, otherName, cother := importtest.GenerateCodex(2, 20<<10)
	writeFile(t, filepath.Join(codexDir, "2026", "05", "11", otherName), cother)
	for _, d := range []string{filepath.Join(claude, "-src-a"), filepath.Join(codexDir, "2026", "05", "11")} {
		require.NoError(t, os.Chmod(d, 0))
		t.Cleanup(func() { _ = os.Chmod(d, 0o755) }) // so that the temporary directory can be removed
	}

	st := newStore(t)
	rep := run(t, st, ingest.ClaudeCode, []string{claude}, ingest.Options{})
	require.Equal(t, 1, rep.Totals.Read)
	require.Equal(t, map[string]string{"-src-a": "unreadable directory: permission denied"}, ignoredReasons(t, rep, claude))
	rep = run(t, st, ingest.Codex, []string{codexDir}, ingest.Options{})
	require.Equal(t, 1, rep.Totals.Read)
	require.Equal(t, map[string]string{"2026/05/11": "unreadable directory: permission denied"}, ignoredReasons(t, rep, codexDir))
	require.ElementsMatch(t, []string{"claude-code-" + id, "codex-" + thread}, sessionIDs(t, st))
}

// TestRunWalkBounds: a Codex walk descends no deeper than MaxDepth (the
// deeper directory is reported, its rollouts not read), and a walk that
// meets more than MaxEntries directory entries fails with
// ErrTooManyEntries, importing nothing.
func TestRunWalkBounds(t *testing.T) {
	dir := t.TempDir()
	_, name, data := importtest.GenerateCodex(1, 20<<10)
	writeFile(t, filepath.Join(dir, "2026", "05", "11", name), data)
	_, deepName, deep := importtest.GenerateCodex(2, 20<<10)
	writeFile(t, filepath.Join(dir, "a", "b", "c", "d", deepName), deep)

	st := newStore(t)
	rep := run(t, st, ingest.Codex, []string{dir}, ingest.Options{MaxDepth: 3})
	require.Equal(t, 1, rep.Totals.Read)
	require.Equal(t, map[string]string{"a/b/c/d": "more than 3 directories deep: not searched"}, ignoredReasons(t, rep, dir))

	for i := range 10 {
		writeFile(t, filepath.Join(dir, "many", strings.Repeat("x", i+1)), nil)
	}
	for _, tool := range []string{ingest.Codex, ingest.ClaudeCode} {
		_, err := ingest.Run(context.Background(), st, tool, []string{dir}, ingest.Options{MaxEntries: 10})
		require.ErrorIs(t, err, ingest.ErrTooManyEntries, tool)
	}
	_, err := ingest.Run(context.Background(), st, ingest.Codex, []string{dir}, ingest.Options{MaxEntries: 100})
	require.NoError(t, err)
}

// TestRunStopsWhenCancelled: an import reading a source that takes
// minutes to read (a sparse transcript of 1 TiB, one line of zero bytes)
// stops at its next read once its context is cancelled, here as soon as
// the small source beside it is written. Before, the converter read on
// to the end of the file, and Run waited for it.
func TestRunStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	id, data := importtest.GenerateClaudeCode(1, 20<<10)
	small := filepath.Join(dir, "-src-app", "a-"+id+".jsonl")
	writeFile(t, small, data)
	huge := filepath.Join(dir, "-src-app", "b-huge.jsonl")
	writeFile(t, huge, nil)
	require.NoError(t, os.Truncate(huge, 1<<40))

	stop := errors.New("interrupt signal received")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	opts := ingest.Options{Progress: func(p ingest.Progress) {
		if p.Path == small {
			cancel(stop)
		}
	}}
	_, err := ingest.Run(ctx, newStore(t), ingest.ClaudeCode, []string{dir}, opts)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, context.Cause(ctx), stop)
}
