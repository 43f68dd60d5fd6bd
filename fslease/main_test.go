package fslease_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a helper mode when the test binary is re-executed as a
// helper process (see helper_test.go), and otherwise runs the tests and
// checks that none of them leaked a goroutine.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}
