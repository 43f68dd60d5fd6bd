package pgstore_test

import (
	"os"
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
)

// TestMain runs a helper mode when the test binary is re-executed as a
// child process by the process tests (see proc_test.go); otherwise it
// starts the PostgreSQL server of the binary (pgtest), runs the tests,
// stops the server; leaktest fails the run on a leaked goroutine or file
// descriptor.
func TestMain(m *testing.M) {
	proctest.Helper(procModeEnv, procHelper)
	os.Exit(pgtest.Run(func() int { return leaktest.Run(m) }))
}
