package sessnap_test

import (
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

// TestMain fails the run when a test leaves a file descriptor (fixtures
// are read from testdata) or a goroutine behind.
func TestMain(m *testing.M) { leaktest.Main(m) }
