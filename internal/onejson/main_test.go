package onejson_test

import (
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

// TestMain fails the run when a test leaves a goroutine or a file
// descriptor behind.
func TestMain(m *testing.M) { leaktest.Main(m) }
