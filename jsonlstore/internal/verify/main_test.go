package verify

import (
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

// TestMain checks that no test leaked a goroutine or a file descriptor.
func TestMain(m *testing.M) { leaktest.Main(m) }
