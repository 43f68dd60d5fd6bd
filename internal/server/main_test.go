package server

import (
	"os"
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
)

// modeEnv selects a child process's helper mode (proc_test.go).
const modeEnv = "SERVER_TEST_HELPER"

// TestMain runs a helper when the test binary is a child, and otherwise
// the tests (stopping the PostgreSQL server pgtest starts for them),
// failing the run when one leaves a goroutine or a file descriptor behind.
func TestMain(m *testing.M) {
	proctest.Helper(modeEnv, runHelper)
	os.Exit(pgtest.Run(func() int { return leaktest.Run(m) }))
}
