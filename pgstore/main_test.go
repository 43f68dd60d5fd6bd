package pgstore_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sessionstore/sessionstore/internal/pgtest"
)

// TestMain runs a helper mode when the test binary is re-executed as a
// child process by the process tests (see proc_test.go); otherwise it
// starts the PostgreSQL server of the binary (pgtest), runs the tests,
// stops the server and checks that no test leaked a goroutine.
func TestMain(m *testing.M) {
	if mode := os.Getenv(procModeEnv); mode != "" {
		os.Exit(procHelperMain(mode))
	}
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
