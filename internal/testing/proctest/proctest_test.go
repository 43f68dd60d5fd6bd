package proctest_test

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
)

const (
	modeEnv = "PROCTEST_TEST_MODE"
	spinEnv = "PROCTEST_TEST_SPIN"
	fifoEnv = "PROCTEST_TEST_FIFO"
)

// spin keeps a CPU busy for a moment.
func spin() {
	x := uint64(1)
	for i := range 1 << 16 {
		x = x*6364136223846793005 + uint64(i)
	}
	sink.Store(x)
}

var sink atomic.Uint64

func TestMain(m *testing.M) {
	proctest.Helper(modeEnv, helper)
	leaktest.Main(m)
}

// helper modes: "echo" prints "ready", then for each stdin line L prints
// "ack N" (N counting from 1) and "got L", and "done" at EOF; "block"
// prints "ready" and waits for stdin to close; "fail" fails; "spin" prints
// "ready", keeps a CPU busy for the duration in spinEnv (until killed
// when it is not set) and prints "done"; with fifoEnv set, "spin" then
// writes "done" to that FIFO instead, and "fifo" prints "ready", reads the
// FIFO and prints "got" and what it read.
func helper(mode string) error {
	switch mode {
	case "spin":
		fmt.Println("ready")
		d, err := time.ParseDuration(os.Getenv(spinEnv))
		if err != nil {
			d = time.Duration(math.MaxInt64)
		}
		for start := time.Now(); time.Since(start) < d; {
			spin()
		}
		if fifo := os.Getenv(fifoEnv); fifo != "" {
			return os.WriteFile(fifo, []byte("done"), 0)
		}
		fmt.Println("done")
		return nil
	case "fifo":
		fmt.Println("ready")
		b, err := os.ReadFile(os.Getenv(fifoEnv))
		if err != nil {
			return err
		}
		fmt.Printf("got %s\n", b)
		return nil
	case "echo":
		fmt.Println("ready")
		sc := bufio.NewScanner(os.Stdin)
		for n := 1; sc.Scan(); n++ {
			fmt.Printf("ack %d\n", n)
			fmt.Printf("got %s\n", sc.Text())
		}
		fmt.Println("done")
		return nil
	case "block":
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString(0)
		return nil
	case "fail":
		return errors.New("failed on purpose")
	}
	return fmt.Errorf("unknown mode %q", mode)
}

func TestLinesAcksAndStop(t *testing.T) {
	c := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "echo", Acks: true})
	require.Equal(t, "ready", c.Next(t))
	c.Send(t, "one")
	c.Send(t, "two")
	c.WaitAcks(t, 2)
	c.WaitAck(t, 2)
	n, last := c.Acks()
	require.Equal(t, 2, n)
	require.Equal(t, uint64(2), last)
	require.Equal(t, "got one", c.Next(t), "acks are counted, not queued")
	c.Stop(t)
	require.True(t, c.Exited())
	// Lines printed before the exit are still there.
	require.Equal(t, "got two", c.Next(t))
	l, ok := c.TryNext()
	require.True(t, ok)
	require.Equal(t, "done", l)
	_, ok = c.TryNext()
	require.False(t, ok)
}

func TestAcksQueuedUnlessCounted(t *testing.T) {
	c := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "echo"})
	require.Equal(t, "ready", c.Next(t))
	c.Send(t, "x")
	require.Equal(t, "ack 1", c.Next(t))
	require.Equal(t, "got x", c.Next(t))
	n, _ := c.Acks()
	require.Zero(t, n)
	c.Stop(t)
}

func TestKill(t *testing.T) {
	c := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "block"})
	require.Equal(t, "ready", c.Next(t))
	c.Signal(t, syscall.SIGSTOP)
	c.Signal(t, syscall.SIGCONT)
	c.Kill(t)
	var ee *exec.ExitError
	require.ErrorAs(t, c.Wait(t), &ee)
}

func TestHelperError(t *testing.T) {
	c := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "fail"})
	err := c.Wait(t)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, c.Stderr(), "helper fail (pid ")
	require.Contains(t, c.Stderr(), "failed on purpose")
}

func TestCleanupKillsARunningChild(t *testing.T) {
	var c *proctest.Child
	t.Run("child", func(t *testing.T) {
		c = proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "block", Within: 10 * time.Second})
		require.Equal(t, "ready", c.Next(t))
		c.Signal(t, syscall.SIGSTOP) // the cleanup continues it before the kill
	})
	require.True(t, c.Exited())
}

func TestFields(t *testing.T) {
	m := proctest.Fields(t, "ready gen=3 rev=10 prev=none", "ready")
	require.Equal(t, map[string]string{"gen": "3", "rev": "10", "prev": "none"}, m)
	require.Equal(t, uint64(10), proctest.Uint(t, m, "rev"))
}

func TestSeed(t *testing.T) {
	const env = "PROCTEST_TEST_SEED"
	a := proctest.Seed(t, env)
	require.Equal(t, a, proctest.Seed(t, env), "fixed per test")
	t.Setenv(env, "42")
	require.Equal(t, uint64(42), proctest.Seed(t, env))
	require.Equal(t, 7, proctest.EnvInt(t, "PROCTEST_TEST_UNSET", 7))
	t.Setenv("PROCTEST_TEST_ROUNDS", "12")
	require.Equal(t, 12, proctest.EnvInt(t, "PROCTEST_TEST_ROUNDS", 7))
}

// A wait lasts while the child works: a child that keeps a CPU busy for
// six times Within before it prints is waited for (on a loaded machine
// too: waiting to run is working), and so is a child blocked on another
// that works.
func TestWaitLastsWhileChildrenWork(t *testing.T) {
	const within = 500 * time.Millisecond
	start := time.Now()
	c := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "spin", Env: []string{spinEnv + "=3s"}, Within: within})
	require.Equal(t, "ready", c.Next(t))
	require.Equal(t, "done", c.Next(t))
	c.Stop(t)
	require.Greater(t, time.Since(start), 3*time.Second)

	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	reader := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "fifo", Env: []string{fifoEnv + "=" + fifo}, Within: within})
	require.Equal(t, "ready", reader.Next(t))
	writer := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "spin", Env: []string{spinEnv + "=3s", fifoEnv + "=" + fifo}, Within: within})
	require.Equal(t, "got done", reader.Next(t), "the reader waits (asleep) for the writer, which works")
	reader.Stop(t)
	writer.Stop(t)
}

// failTB is a testing.TB whose Fatalf and Errorf record the failure and
// end the goroutine, with a deadline of its own (zero: none).
type failTB struct {
	testing.TB
	deadline time.Time
	failed   string
}

func (f *failTB) Helper() {}

func (f *failTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *failTB) Errorf(format string, args ...any) { f.Fatalf(format, args...) }

func (f *failTB) Deadline() (time.Time, bool) { return f.deadline, !f.deadline.IsZero() }

// failing runs wait with tb (a failTB) on a goroutine of its own and
// returns the failure it recorded and how long it took.
func failing(tb *failTB, wait func(testing.TB)) (string, time.Duration) {
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(tb)
	}()
	<-done
	return tb.failed, time.Since(start)
}

// A child that hangs (asleep, waiting for a line that never comes) is
// caught once no child has made progress for Within.
func TestWaitCatchesAHang(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the work of a process is read from /proc: elsewhere a wait lasts until the deadline")
	}
	c := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "block", Within: time.Second})
	require.Equal(t, "ready", c.Next(t))
	failed, took := failing(&failTB{TB: t}, func(tb testing.TB) { c.Next(tb) })
	require.Contains(t, failed, "waiting for a line from helper block pid ")
	require.Contains(t, failed, "no progress for 1s")
	require.GreaterOrEqual(t, took, time.Second)
	t.Logf("caught after %v", took)
	failed, _ = failing(&failTB{TB: t}, func(tb testing.TB) { _ = c.Wait(tb) })
	require.Contains(t, failed, "waiting for helper block pid ")
	require.Contains(t, failed, "to exit: no progress for 1s")
}

// A child that works forever is given up on before the test binary's
// deadline, in time to report it.
func TestWaitEndsBeforeTheDeadline(t *testing.T) {
	c := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "spin", Within: time.Hour})
	require.Equal(t, "ready", c.Next(t))
	deadline := time.Now().Add(proctest.DeadlineMargin + time.Second)
	failed, _ := failing(&failTB{TB: t, deadline: deadline}, func(tb testing.TB) { c.Next(tb) })
	require.Contains(t, failed, "waiting for a line from helper spin pid ")
	require.Contains(t, failed, "the test binary's deadline")
	require.False(t, time.Now().Before(deadline.Add(-proctest.DeadlineMargin)), "not before the deadline less the margin")
	require.True(t, time.Now().Before(deadline), "before the deadline")
}
