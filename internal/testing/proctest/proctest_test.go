package proctest_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
)

const modeEnv = "PROCTEST_TEST_MODE"

func TestMain(m *testing.M) {
	proctest.Helper(modeEnv, helper)
	leaktest.Main(m)
}

// helper modes: "echo" prints "ready", then for each stdin line L prints
// "ack N" (N counting from 1) and "got L", and "done" at EOF; "block"
// prints "ready" and waits for stdin to close; "fail" fails.
func helper(mode string) error {
	switch mode {
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
