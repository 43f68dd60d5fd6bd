package jsonlstore

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
)

// The sync-mutation check proves that the power-loss test has teeth and
// that the store does no sync for nothing: for each sync call of the
// power-loss workload in turn, the run is repeated with that one call made
// a no-op that reports success (vfs.Fault.Silent over the Sim), and the
// states after crashes of its points must make plChecker.check fail
// (crashtest.Mutate). A sync whose removal no check notices is either
// needless or guarded by no test; the table the test logs says which syncs
// were caught, where and by what check.
//
// The full sweep (every sync call, up to mutFullSeeds unkind crashes per
// point) runs when JSONLSTORE_MUTATE_SYNC=1 (make mutate-sync); normal
// runs check a few representative sync calls, so the machinery cannot rot.

const (
	mutEnv = "JSONLSTORE_MUTATE_SYNC"
	// mutFullSeeds and mutQuickSeeds bound the unkind crashes tried per
	// point before a mutation is declared unnoticed (the search stops at
	// the first failed check). A lost durable cut of a torn tail shows
	// only in a few crashes in a hundred, hence the large full budget.
	mutFullSeeds  = 300
	mutQuickSeeds = 40
)

// mutQuick selects the sync calls the normal run mutates: one of each
// role, the nth (from 0) call matching, by its operation and name in the
// unmutated run.
var mutQuick = []struct {
	role  string
	nth   int
	match func(op vfs.Op, name string) bool
}{
	{"create: log data", 0, func(op vfs.Op, name string) bool {
		return op == vfs.OpDatasync && strings.HasPrefix(name, layout.TmpDirPrefix)
	}},
	{"create: temp directory", 0, func(op vfs.Op, name string) bool {
		return op == vfs.OpSyncDir && strings.HasPrefix(name, layout.TmpDirPrefix)
	}},
	{"create: settings", 0, func(op vfs.Op, name string) bool {
		return op == vfs.OpSync && strings.HasPrefix(name, layout.TmpDirPrefix) && strings.HasSuffix(name, "/"+SettingsFile)
	}},
	{"create: publish", 0, func(op vfs.Op, name string) bool { return op == vfs.OpSyncDir && name == "." }},
	// B's writer appends through the descriptor its creation opened.
	{"append", 1, func(op vfs.Op, name string) bool {
		return op == vfs.OpDatasync && strings.HasPrefix(name, layout.TmpDirPrefix+string(plIDs[plB])+"-")
	}},
	{"delete", 3, func(op vfs.Op, name string) bool { return op == vfs.OpSyncDir && name == "." }},
	{"recovery: forensic data", 0, func(op vfs.Op, name string) bool {
		return op == vfs.OpSync && strings.Contains(name, "/"+ForensicDir+"/")
	}},
}

// catalogSync reports whether a sync of the workloads of sessions is one of
// the catalog's (the marks' directory), which the catalog's crash test
// proves (catalog_crash_test.go).
func catalogSync(name string) bool {
	return name == CatalogDir || strings.HasPrefix(name, CatalogDir+"/") || strings.Contains(name, " "+CatalogDir)
}

func TestSyncMutation(t *testing.T) {
	base := plWorkload(t, -1)
	var syncs []crashtest.Point[plAck] // the points at the sync calls of the unmutated run, in order
	for _, p := range base.Points() {
		if p.Op != "" {
			syncs = append(syncs, p)
		}
	}
	require.Len(t, syncs, len(base.Syncs()), "a point at every sync call")

	seeds := mutFullSeeds
	var ks []int
	if os.Getenv(mutEnv) == "1" {
		for k, p := range syncs {
			if !catalogSync(p.Name) {
				ks = append(ks, k)
			}
		}
	} else {
		seeds = mutQuickSeeds
		for _, q := range mutQuick {
			k, n := -1, 0
			for i, p := range syncs {
				if q.match(p.Op, p.Name) {
					if n == q.nth {
						k = i
						break
					}
					n++
				}
			}
			require.GreaterOrEqual(t, k, 0, "no sync call for %s: update mutQuick", q.role)
			ks = append(ks, k)
		}
		t.Logf("checking %d of %d sync calls (%s=1 checks all)", len(ks), len(syncs), mutEnv)
	}
	crashtest.Mutate(t, base.Recorder, ks, seeds, 0, func(t *testing.T, k int) (*crashtest.Recorder[plAck], crashtest.Check[plAck]) {
		run := plWorkload(t, k)
		c := &plChecker{run: run}
		return run.Recorder, c.check
	})
}
