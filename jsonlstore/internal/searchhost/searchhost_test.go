package searchhost_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

// TestMain checks that no test leaked a goroutine or a file descriptor.
func TestMain(m *testing.M) { leaktest.Main(m) }

// TestLinksNoSQLite: the seam the store imports links no SQLite.
func TestLinksNoSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "modernc.org/") || strings.Contains(p, "/searchindex") {
			t.Errorf("searchhost imports %s", p)
		}
	}
}
