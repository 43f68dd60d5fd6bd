package fslease_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
)

// Helper processes, through proctest: the test binary re-executes itself
// with helperEnv set to a mode, and TestMain runs helperMain instead of
// the tests. A helper reports on stdout, one line per event, and a test
// reads those lines with a deadline: that, not sleeping, is how parent and
// child synchronise.
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

// helperMain runs helper mode mode (TestMain's proctest.Helper calls it).
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

// startHelper starts the test binary in mode with extra environment. The
// process is killed and reaped at cleanup if the test has not done so.
func startHelper(t testing.TB, mode string, env ...string) *proctest.Child {
	t.Helper()
	return proctest.Start(t, proctest.Cmd{ModeEnv: helperEnv, Mode: mode, Env: env, Within: helperLineWithin})
}

// held reads the helper's "held GEN [CHILDPID]" line.
func held(t testing.TB, h *proctest.Child) (gen uint64, rest []string) {
	t.Helper()
	f := strings.Fields(h.Next(t))
	require.GreaterOrEqual(t, len(f), 2)
	require.Equal(t, "held", f[0])
	gen, err := strconv.ParseUint(f[1], 10, 64)
	require.NoError(t, err)
	return gen, f[2:]
}
