package proctest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// LineWithin is how long a wait for a child's line or exit lasts while
// no child of the test makes progress, unless Cmd.Within says otherwise
// (see patience.go: a wait lasts while the children work, up to the test
// binary's deadline).
const LineWithin = 30 * time.Second

// ChildWait bounds a wait a child makes on its own (for a lease another
// process holds, say): long, because the test's waits on that child,
// which follow the work, catch a child that waits for nothing, and the
// test kills its children when it ends.
const ChildWait = time.Hour

// Helper runs helper mode os.Getenv(modeEnv) with run and exits, when
// modeEnv is set: with status 0 when run returns nil, else with status 1
// after writing the error to standard error. When modeEnv is not set it
// returns at once, and TestMain goes on to run the tests.
func Helper(modeEnv string, run func(mode string) error) {
	mode := os.Getenv(modeEnv)
	if mode == "" {
		return
	}
	if err := run(mode); err != nil {
		fmt.Fprintf(os.Stderr, "%s helper %s (pid %d): %v\n", filepath.Base(os.Args[0]), mode, os.Getpid(), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Cmd describes a child: the test binary again, in a helper mode.
type Cmd struct {
	// ModeEnv is the environment variable TestMain dispatches on, and
	// Mode the helper mode it is set to.
	ModeEnv, Mode string
	// Env is more environment for the child, as KEY=VALUE.
	Env []string
	// Args are flags for the test binary; none are needed when TestMain
	// dispatches before any test runs.
	Args []string
	// Acks makes lines "ack N" (N a decimal number) acknowledgements:
	// counted (Acks, WaitAcks, WaitAck), not queued for Next. A child that
	// acknowledges every write can then print thousands of them.
	Acks bool
	// Within bounds each wait for a line or an exit while no child of
	// the test makes progress (prints, runs, waits to run or for a disk);
	// zero means LineWithin. A wait during which the children work lasts
	// until the test binary's deadline draws near.
	Within time.Duration
}

// Child is a running child process. Its stdout is read by one goroutine
// into a queue of lines; the methods are for the test's goroutine.
type Child struct {
	cmd    *exec.Cmd
	mode   string
	stdin  io.WriteCloser
	stderr *stderrBuf
	within time.Duration

	mu      sync.Mutex
	lines   []string
	read    int
	acks    int
	lastAck uint64
	eof     bool
	notify  chan struct{} // capacity 1: something changed

	exited  chan struct{} // closed after Wait returned
	waitErr error         // Wait's result, valid once exited is closed
	reaped  bool          // test goroutine only
}

// Start starts the child described by c. It is stopped (SIGCONT, in case
// a test stopped it, then SIGKILL) and reaped at cleanup unless the test
// reaped it.
func Start(tb testing.TB, c Cmd) *Child {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatalf("proctest: %v", err)
	}
	cmd := exec.Command(exe, c.Args...)
	// The race runtime sleeps a second at exit by default, and children
	// exit often. (exec keeps the last of duplicate variables.)
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), append([]string{c.ModeEnv + "=" + c.Mode, "GORACE=" + gorace}, c.Env...)...)
	ch := &Child{
		cmd: cmd, mode: c.Mode, stderr: &stderrBuf{}, within: c.Within,
		notify: make(chan struct{}, 1), exited: make(chan struct{}),
	}
	if ch.within == 0 {
		ch.within = LineWithin
	}
	cmd.Stderr = ch.stderr
	if ch.stdin, err = cmd.StdinPipe(); err != nil {
		tb.Fatalf("proctest: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("proctest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("proctest: start helper %s: %v", c.Mode, err)
	}
	register(cmd.Process.Pid)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			ch.onLine(sc.Text(), c.Acks)
		}
		ch.mu.Lock()
		ch.eof = true
		ch.mu.Unlock()
		ch.poke()
		// Wait only after stdout reached EOF, as os/exec requires.
		ch.waitErr = cmd.Wait()
		unregister(cmd.Process.Pid)
		close(ch.exited)
	}()
	tb.Cleanup(func() {
		if ch.reaped {
			return
		}
		_ = ch.stdin.Close()
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		if why := ch.await(tb, ch.within, func() bool { return ch.isExited() }); why != "" {
			tb.Errorf("proctest: %s did not exit after SIGKILL: %s", ch, why)
			return
		}
		ch.reaped = true
		ch.checkStderr(tb)
	})
	return ch
}

func (c *Child) String() string { return fmt.Sprintf("helper %s pid %d", c.mode, c.PID()) }

// PID is the child's process ID.
func (c *Child) PID() int { return c.cmd.Process.Pid }

func (c *Child) onLine(l string, acks bool) {
	c.mu.Lock()
	if rest, ok := strings.CutPrefix(l, "ack "); ok && acks {
		if n, err := strconv.ParseUint(rest, 10, 64); err == nil {
			c.acks++
			c.lastAck = max(c.lastAck, n)
			c.mu.Unlock()
			c.poke()
			return
		}
	}
	c.lines = append(c.lines, l)
	c.mu.Unlock()
	c.poke()
}

func (c *Child) poke() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// waitFor waits until cond (called with c.mu held) is true, failing tb if
// the child's stdout ends first or the wait runs out (await).
func (c *Child) waitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	ok, eof := false, false
	why := c.await(tb, within, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		ok, eof = cond(), c.eof // cond is called until it holds, never after
		return ok || eof
	})
	switch {
	case ok:
	case why != "":
		tb.Fatalf("proctest: waiting for %s from %s: %s\nstderr:\n%s", what, c, why, c.stderr)
	case eof:
		if why := c.await(tb, within, c.isExited); why != "" {
			tb.Fatalf("proctest: %s closed its stdout while the test waited for %s, and did not exit: %s\nstderr:\n%s", c, what, why, c.stderr)
		}
		tb.Fatalf("proctest: %s exited while the test waited for %s: %v\nstderr:\n%s", c, what, c.waitErr, c.stderr)
	}
}

// await waits until done returns true and returns "", or returns why it
// gave up: no child of the test made progress for within, or the test
// binary's deadline is near (patience). A line from c is progress.
func (c *Child) await(tb testing.TB, within time.Duration, done func() bool) string {
	p := newPatience(tb, within)
	timer := time.NewTimer(p.tick())
	defer timer.Stop()
	exited := c.exited // nil once closed, so that the loop does not spin
	for {
		if done() {
			return ""
		}
		if why := p.check(); why != "" {
			return why
		}
		timer.Reset(p.tick())
		select {
		case <-c.notify:
			p.progressed()
		case <-exited:
			exited = nil
		case <-timer.C:
		}
	}
}

// Watch returns a check for a wait the test makes on its own (a loop
// polling a file the child writes, say), bounded as the waits of Next and
// Wait are: each call fails tb, naming what, once no child of the test has
// made progress for the child's Within or the test binary's deadline is
// near, or when the child has exited. It is cheap enough to call in a
// tight loop.
func (c *Child) Watch(tb testing.TB, what string) func() {
	p := newPatience(tb, c.within)
	return func() {
		tb.Helper()
		if c.Exited() {
			c.await(tb, c.within, c.isExited)
			tb.Fatalf("proctest: %s exited while the test waited for %s: %v\nstderr:\n%s", c, what, c.waitErr, c.stderr)
		}
		if why := p.check(); why != "" {
			tb.Fatalf("proctest: waiting for %s from %s: %s\nstderr:\n%s", what, c, why, c.stderr)
		}
	}
}

// isExited reports whether the child has been waited for (its exit status
// is known).
func (c *Child) isExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// Next returns the child's next line (other than an acknowledgement),
// failing tb if none comes in time or the child's stdout ends first.
// Lines a child printed before it exited are still returned after it is
// reaped.
func (c *Child) Next(tb testing.TB) string {
	tb.Helper()
	return c.NextWithin(tb, c.within)
}

// NextWithin is Next with a deadline of d.
func (c *Child) NextWithin(tb testing.TB, d time.Duration) string {
	tb.Helper()
	var l string
	c.waitFor(tb, d, "a line", func() bool {
		if c.read < len(c.lines) {
			l = c.lines[c.read]
			c.read++
			return true
		}
		return false
	})
	return l
}

// TryNext returns the next line (other than an acknowledgement) if one is
// queued.
func (c *Child) TryNext() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read < len(c.lines) {
		c.read++
		return c.lines[c.read-1], true
	}
	return "", false
}

// Acks reports how many acknowledgements the child printed and the
// highest number among them (see Cmd.Acks).
func (c *Child) Acks() (n int, last uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acks, c.lastAck
}

// WaitAcks waits until the child has printed n acknowledgements in all.
func (c *Child) WaitAcks(tb testing.TB, n int) {
	tb.Helper()
	c.waitFor(tb, c.within, fmt.Sprintf("%d acks", n), func() bool { return c.acks >= n })
}

// WaitAck waits until the child has acknowledged number n or a higher
// one.
func (c *Child) WaitAck(tb testing.TB, n uint64) {
	tb.Helper()
	c.waitFor(tb, c.within, fmt.Sprintf("ack %d", n), func() bool { return c.lastAck >= n })
}

// Exited reports whether the child's stdout has ended (it exited, or is
// exiting).
func (c *Child) Exited() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eof
}

// Stderr is what the child wrote to standard error so far (the first
// MiB).
func (c *Child) Stderr() string { return c.stderr.String() }

// Send writes line and a newline to the child's stdin.
func (c *Child) Send(tb testing.TB, line string) {
	tb.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		tb.Fatalf("proctest: write to %s: %v", c, err)
	}
}

// CloseStdin closes the child's stdin, which asks it to finish; closing
// it twice is harmless.
func (c *Child) CloseStdin() { _ = c.stdin.Close() }

// Signal sends sig to the child.
func (c *Child) Signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("proctest: signal %v to %s: %v", sig, c, err)
	}
}

// Wait waits for the child to exit and returns exec.Cmd.Wait's error.
// Its output stays queued for Next and TryNext.
func (c *Child) Wait(tb testing.TB) error {
	tb.Helper()
	if c.reaped {
		return c.waitErr
	}
	if why := c.await(tb, c.within, c.isExited); why != "" {
		tb.Fatalf("proctest: waiting for %s to exit: %s\nstderr:\n%s", c, why, c.stderr)
	}
	c.reaped = true
	c.checkStderr(tb)
	return c.waitErr
}

// Kill sends SIGKILL and reaps the child, which must have died of it (not
// exited on its own before).
func (c *Child) Kill(tb testing.TB) {
	tb.Helper()
	c.Signal(tb, syscall.SIGKILL)
	err := c.Wait(tb)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		tb.Fatalf("proctest: %s did not die of SIGKILL: %v\nstderr:\n%s", c, err, c.stderr)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		tb.Fatalf("proctest: %s did not die of SIGKILL: %v\nstderr:\n%s", c, err, c.stderr)
	}
}

// Stop closes the child's stdin and requires a clean exit (status 0).
func (c *Child) Stop(tb testing.TB) {
	tb.Helper()
	c.CloseStdin()
	if err := c.Wait(tb); err != nil {
		tb.Fatalf("proctest: %s: %v\nstderr:\n%s", c, err, c.stderr)
	}
}

func (c *Child) checkStderr(tb testing.TB) {
	tb.Helper()
	if s := c.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		tb.Errorf("proctest: %s reported a data race:\n%s", c, s)
	}
}

// stderrBuf keeps a child's standard error, up to 1 MiB.
type stderrBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (e *stderrBuf) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.buf.Len() < 1<<20 {
		e.buf.Write(p)
	}
	return len(p), nil
}

func (e *stderrBuf) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.buf.String()
}
