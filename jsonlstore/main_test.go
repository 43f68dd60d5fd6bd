package jsonlstore

import (
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
)

// TestMain runs a helper mode when the test binary is re-executed as a
// child process by the process tests (see helper_test.go), and otherwise
// runs the tests and checks that none of them leaked a goroutine or a file descriptor.
func TestMain(m *testing.M) {
	proctest.Helper(procModeEnv, procHelper)
	leaktest.Main(m)
}
