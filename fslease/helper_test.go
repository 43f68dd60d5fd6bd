package fslease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
)

// Helper processes. The test binary re-executes itself with helperEnv set
// to a mode; TestMain then runs runHelper instead of the tests. A helper
// reports on stdout, one line per event, and a test reads those lines with
// a deadline: that, not sleeping, is how parent and child synchronise.
const (
	helperEnv = "FSLEASE_HELPER"
	dirEnv    = "FSLEASE_DIR"
	logEnv    = "FSLEASE_LOG"
	roundsEnv = "FSLEASE_ROUNDS"
	hbEnv     = "FSLEASE_HEARTBEAT"

	modeHold         = "hold"           // acquire, print "held GEN", release when stdin closes
	modeHoldSpawn    = "hold-spawn"     // acquire, start `sleep 30`, print "held GEN CHILDPID", wait for stdin EOF
	modeAcquireOnce  = "acquire-once"   // acquire, release, print "released GEN", exit
	modeContend      = "contend"        // acquire/release ROUNDS times, logging enter/exit lines
	helperLineWithin = 20 * time.Second // generous: helpers are race-enabled and the machine may be loaded
)

func runHelper(mode string) int {
	if err := helperMain(mode); err != nil {
		fmt.Fprintf(os.Stderr, "fslease helper %s (pid %d): %v\n", mode, os.Getpid(), err)
		return 1
	}
	return 0
}

func helperMain(mode string) error {
	ctx := context.Background()
	dir := os.Getenv(dirEnv)
	opts := fslease.Options{Label: "helper-" + mode}
	if hb := os.Getenv(hbEnv); hb != "" {
		d, err := time.ParseDuration(hb)
		if err != nil {
			return err
		}
		opts.HeartbeatInterval = d
	}
	switch mode {
	case modeHold:
		l, err := fslease.Acquire(ctx, dir, opts)
		if err != nil {
			return err
		}
		fmt.Printf("held %d\n", l.Generation())
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
		return l.Release(ctx)
	case modeHoldSpawn:
		l, err := fslease.Acquire(ctx, dir, opts)
		if err != nil {
			return err
		}
		// No stdio is shared with the child, so only an inherited lock
		// descriptor could tie the child to the lease.
		child := exec.Command("sleep", "30")
		if err := child.Start(); err != nil {
			return err
		}
		fmt.Printf("held %d %d\n", l.Generation(), child.Process.Pid)
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = child.Process.Kill()
		_ = child.Wait()
		return l.Release(ctx)
	case modeAcquireOnce:
		l, err := fslease.Acquire(ctx, dir, opts)
		if err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return err
		}
		fmt.Printf("released %d\n", l.Generation())
		return nil
	case modeContend:
		return contend(ctx, dir, opts)
	default:
		return fmt.Errorf("unknown helper mode %q", mode)
	}
}

// contend acquires and releases the lease ROUNDS times. While it holds the
// lease it appends "enter GEN PID" and "exit GEN PID" lines to the shared
// O_APPEND log, each with a single write, so the log orders them as the
// kernel executed them. Every other round starts with TryAcquire, which
// must either succeed or report ErrHeld.
func contend(ctx context.Context, dir string, opts fslease.Options) error {
	rounds, err := strconv.Atoi(os.Getenv(roundsEnv))
	if err != nil {
		return err
	}
	log, err := os.OpenFile(os.Getenv(logEnv), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer log.Close()
	pid := os.Getpid()
	tries := 0
	for i := range rounds {
		var l *fslease.Lease
		if i%2 == 0 {
			l, err = fslease.TryAcquire(ctx, dir, opts)
			if err != nil && !errors.Is(err, fslease.ErrHeld) {
				return fmt.Errorf("round %d: try: %w", i, err)
			}
			if err == nil {
				tries++
			}
		}
		if l == nil {
			if l, err = fslease.Acquire(ctx, dir, opts); err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
		}
		if _, err := fmt.Fprintf(log, "enter %d %d\n", l.Generation(), pid); err != nil {
			return err
		}
		if err := l.Check(); err != nil {
			return fmt.Errorf("round %d: check: %w", i, err)
		}
		if _, err := fmt.Fprintf(log, "exit %d %d\n", l.Generation(), pid); err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return fmt.Errorf("round %d: release: %w", i, err)
		}
	}
	fmt.Printf("done %d %d\n", rounds, tries)
	return nil
}

// helper is a running helper process.
type helper struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	pid   int
	exit  chan error // receives Wait's result once
	err   error      // Wait's result, after waited
	done  bool
}

// startHelper starts the test binary in mode with extra environment. The
// process is killed (after SIGCONT, in case a test stopped it) and reaped
// at cleanup.
func startHelper(t testing.TB, mode string, env ...string) *helper {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	// The race runtime sleeps a second at exit by default; helpers exit
	// often. (exec keeps the last of duplicate variables.)
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode, "GORACE=" + gorace}, env...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &helper{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 16), pid: cmd.Process.Pid, exit: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		// Wait only after stdout reached EOF, as os/exec requires.
		h.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if !h.done {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			_ = stdin.Close()
			_ = h.wait(t) // killed just above: its exit error is expected
		}
	})
	return h
}

// line returns the helper's next stdout line, failing the test if none
// comes in time.
func (h *helper) line(t testing.TB) string {
	t.Helper()
	return h.lineWithin(t, helperLineWithin)
}

// lineWithin is line with a deadline of d.
func (h *helper) lineWithin(t testing.TB, d time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		require.True(t, ok, "helper %d exited before printing a line", h.pid)
		return l
	case <-time.After(d):
		require.FailNow(t, "timed out waiting for a helper line", "pid %d", h.pid)
		return ""
	}
}

// held reads the helper's "held GEN [CHILDPID]" line.
func (h *helper) held(t testing.TB) (gen uint64, rest []string) {
	t.Helper()
	f := strings.Fields(h.line(t))
	require.GreaterOrEqual(t, len(f), 2)
	require.Equal(t, "held", f[0])
	gen, err := strconv.ParseUint(f[1], 10, 64)
	require.NoError(t, err)
	return gen, f[2:]
}

// wait reaps the helper (draining its stdout) and returns Wait's error.
func (h *helper) wait(t testing.TB) error {
	t.Helper()
	if h.done {
		return h.err
	}
	// Drain stdout so that the reader goroutine reaches Wait.
	for range h.lines {
	}
	select {
	case h.err = <-h.exit:
	case <-time.After(helperLineWithin):
		require.FailNow(t, "timed out waiting for helper to exit", "pid %d", h.pid)
	}
	h.done = true
	return h.err
}

// kill sends SIGKILL and reaps the helper.
func (h *helper) kill(t testing.TB) {
	t.Helper()
	require.NoError(t, h.cmd.Process.Kill())
	err := h.wait(t)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
}

// finish closes the helper's stdin (so a holder releases) and requires a
// clean exit.
func (h *helper) finish(t testing.TB) {
	t.Helper()
	require.NoError(t, h.stdin.Close())
	require.NoError(t, h.wait(t))
}
