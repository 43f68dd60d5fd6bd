//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/clitest"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

// TestImportRefusesAPipe: a named pipe given as the file to import is
// refused at once, exit status 1. Before, the command opened it to read,
// which blocks until a writer comes (none does), and caught SIGINT and
// SIGTERM without ever looking: it hung for good (here, until clitest's
// minute ran out).
func TestImportRefusesAPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "session.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, tool := range []string{"claude-code", "codex"} {
		r := sessions(t, nil, "--dir", filepath.Join(dir, "store"), "import", tool, fifo)
		require.Equal(t, exitFail, r.Code, r.String())
		require.Contains(t, r.Stderr, "not a regular file: a named pipe", r.String())
	}
}

// TestImportTreeWithPipesAndLinks: a projects directory holding, beside
// a transcript, a named pipe, a link to /dev/zero and a link to a
// transcript outside it, each named as a transcript: the import ends,
// imports the transcript alone and lists what it passed over.
func TestImportTreeWithPipesAndLinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "projects")
	id, data := importtest.GenerateClaudeCode(1, 20<<10)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "-src-app"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "-src-app", id+".jsonl"), data, 0o600))
	otherID, other := importtest.GenerateClaudeCode(2, 20<<10)
	require.NoError(t, os.WriteFile(filepath.Join(base, otherID+".jsonl"), other, 0o600))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "-src-app", "fifo.jsonl"), 0o600))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "-src-app", "zero.jsonl")))
	require.NoError(t, os.Symlink(filepath.Join(base, otherID+".jsonl"), filepath.Join(dir, "-src-app", "out.jsonl")))

	root := filepath.Join(base, "store")
	r := sessions(t, nil, "--dir", root, "import", "claude-code", dir)
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "ignored "+filepath.Join(dir, "-src-app", "fifo.jsonl")+": not a regular file: a named pipe\n")
	require.Contains(t, r.Stdout, "ignored "+filepath.Join(dir, "-src-app", "zero.jsonl")+": a symbolic link: links are not followed\n")
	require.Contains(t, r.Stdout, "ignored "+filepath.Join(dir, "-src-app", "out.jsonl")+": a symbolic link: links are not followed\n")
	require.Contains(t, r.Stdout, "claude-code: 1 source; 1 read, 0 unchanged")
	imported := importedSessions(t, root)
	require.Len(t, imported, 1)
	require.Contains(t, imported, session.SessionID("claude-code-"+id))
}

// TestImportStopsOnSignal: a real `sessions import` reading a transcript
// that takes minutes to read (a sparse file of 1 TiB, one line of zero
// bytes) is sent SIGINT, or SIGTERM, once it is reading it: it stops at
// once, says so, and exits with status 1. Before, the signal was caught
// and never looked at: the import read on (here, until the minute ran
// out).
func TestImportStopsOnSignal(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("needs /proc/PID/io to see the import reading:", err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		want string
	}{
		{syscall.SIGINT, "stopped (interrupt signal received)"},
		{syscall.SIGTERM, "stopped (terminated signal received)"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			huge := filepath.Join(dir, "projects", "-src-app", "huge.jsonl")
			require.NoError(t, os.MkdirAll(filepath.Dir(huge), 0o755))
			require.NoError(t, os.WriteFile(huge, nil, 0o600))
			require.NoError(t, os.Truncate(huge, 1<<40))

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "sessions"), "--dir", filepath.Join(dir, "store"),
				"import", "claude-code", filepath.Join(dir, "projects"))
			cmd.Env = clitest.CleanEnv(t)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			// Once it has read more than its first lines' look (64 MiB), it
			// is converting the transcript: its signal handler is long set.
			waitRead(ctx, t, cmd.Process.Pid, 128<<20)
			require.NoError(t, cmd.Process.Signal(tc.sig))
			err := cmd.Wait()
			require.NoError(t, ctx.Err(), "the import did not stop on %v; stderr: %s", tc.sig, stderr.String())
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "%v", err)
			require.Equal(t, exitFail, ee.ExitCode(), "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), tc.want)
			require.Contains(t, stderr.String(), "import again to finish")
		})
	}
}

// waitRead waits until the process pid has read more than n bytes (its
// rchar in /proc/PID/io), or ctx is done.
func waitRead(ctx context.Context, t *testing.T, pid int, n int64) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if readBytes(t, pid) > n {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("process %d never read %d bytes", pid, n)
		}
	}
}

func readBytes(t *testing.T, pid int) int64 {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}
