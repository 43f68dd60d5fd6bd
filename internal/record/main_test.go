package record

import (
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

func TestMain(m *testing.M) { leaktest.Main(m) }
