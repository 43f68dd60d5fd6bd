package leaktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

// TestLeakedFDsNamesTheFile: a descriptor opened after the snapshot is
// reported with its target, and closing it clears the report.
func TestLeakedFDsNamesTheFile(t *testing.T) {
	primeRuntimeFDs()
	before, ok := openFDs()
	if !ok {
		t.Skip("no /proc/self/fd on this platform")
	}
	p := filepath.Join(t.TempDir(), "left-open")
	f, err := os.Create(p)
	require.NoError(t, err)
	now, ok := openFDs()
	require.True(t, ok)
	var found []string
	for fd, target := range now {
		if _, ok := before[fd]; !ok {
			found = append(found, fd+" -> "+target)
		}
	}
	require.Len(t, found, 1)
	require.True(t, strings.HasSuffix(found[0], " -> "+p), found[0])
	require.NoError(t, f.Close())
	require.Empty(t, leakedFDs(before))
}
