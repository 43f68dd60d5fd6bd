package jsonlstore

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a helper mode when the test binary is re-executed as a
// child process by the process tests (see helper_test.go), and otherwise
// runs the tests and checks that none of them leaked a goroutine.
func TestMain(m *testing.M) {
	if mode := os.Getenv(procModeEnv); mode != "" {
		os.Exit(procHelperMain(mode))
	}
	goleak.VerifyTestMain(m)
}
