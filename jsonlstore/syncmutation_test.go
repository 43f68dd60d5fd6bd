package jsonlstore

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/vfs"
)

// The sync-mutation check (DESIGN section 10; "Hardening" item 2) proves
// that the power-loss test has teeth and that the store does no sync for
// nothing: for each sync call of the power-loss workload in turn, the run
// is repeated with that one call made a no-op that reports success
// (vfs.Fault.Silent over the Sim), and the states after crashes of its
// snapshots must make plCheck fail. A sync whose removal no check notices
// is either needless or guarded by no test; the table the test logs says
// which syncs were caught, where and by what check.
//
// The full sweep (every sync call, up to mutFullSeeds unkind crashes per
// snapshot) runs when JSONLSTORE_MUTATE_SYNC=1 (make mutate-sync); normal
// runs check a few representative sync calls, so the machinery cannot rot.

const (
	mutEnv = "JSONLSTORE_MUTATE_SYNC"
	// mutFullSeeds and mutQuickSeeds bound the unkind crashes tried per
	// snapshot before a mutation is declared unnoticed (the search stops
	// at the first failed check). A lost durable cut of a torn tail shows
	// only in a few crashes in a hundred, hence the large full budget.
	mutFullSeeds  = 300
	mutQuickSeeds = 40
)

// mutResult is what mutating one sync call did.
type mutResult struct {
	k     int    // the sync call made a no-op
	what  string // its operation and file
	found bool
	at    string // the snapshot whose crash showed it, and the crash
	check string // the check that failed
	err   error
	tried int // crashed states checked
}

// mutQuick selects the sync calls the normal run mutates: one of each
// role, the nth (from 0) call matching, by its operation and name in the
// unmutated run.
var mutQuick = []struct {
	role  string
	nth   int
	match func(op vfs.Op, name string) bool
}{
	{"create: log data", 0, func(op vfs.Op, name string) bool {
		return op == vfs.OpDatasync && strings.HasPrefix(name, tmpDirPrefix)
	}},
	{"create: temp directory", 0, func(op vfs.Op, name string) bool {
		return op == vfs.OpSyncDir && strings.HasPrefix(name, tmpDirPrefix)
	}},
	{"create: publish", 0, func(op vfs.Op, name string) bool { return op == vfs.OpSyncDir && name == "." }},
	// B's writer appends through the descriptor its creation opened.
	{"append", 1, func(op vfs.Op, name string) bool {
		return op == vfs.OpDatasync && strings.HasPrefix(name, tmpDirPrefix+string(plIDs[plB])+"-")
	}},
	{"delete", 3, func(op vfs.Op, name string) bool { return op == vfs.OpSyncDir && name == "." }},
	{"recovery: forensic data", 0, func(op vfs.Op, name string) bool {
		return op == vfs.OpSync && strings.Contains(name, "/"+ForensicDir+"/")
	}},
}

func TestSyncMutation(t *testing.T) {
	full := os.Getenv(mutEnv) == "1"
	start := time.Now()
	base := plWorkload(t, -1)
	var syncs []plPoint // the sync calls of the unmutated run, in order
	for _, p := range base.points {
		if p.op != "" && p.op != plAfterRecovery {
			syncs = append(syncs, p)
		}
	}
	require.Equal(t, base.faulty.Calls(vfs.OpAnySync), len(syncs), "every sync call reached the Sim's hook")

	seeds := mutFullSeeds
	var ks []int
	if full {
		for k := range syncs {
			ks = append(ks, k)
		}
	} else {
		seeds = mutQuickSeeds
		for _, q := range mutQuick {
			k, n := -1, 0
			for i, p := range syncs {
				if q.match(p.op, p.name) {
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

	results := make([]mutResult, len(ks))
	t.Run("mutants", func(t *testing.T) {
		for i, k := range ks {
			t.Run(fmt.Sprintf("sync=%02d", k), func(t *testing.T) {
				t.Parallel()
				results[i] = mutate(t, k, syncs[k].describe(), seeds)
			})
		}
	})

	var table strings.Builder
	fmt.Fprintf(&table, "sync mutation table (%d seeds per snapshot at most):\n", seeds)
	fmt.Fprintf(&table, "%4s  %-44s  %-8s  %s\n", "sync", "operation", "detected", "first failed check (snapshot, crash): error")
	var missed []string
	for _, r := range results {
		verdict, how := "yes", fmt.Sprintf("%s (%s): %v", r.check, r.at, r.err)
		if !r.found {
			verdict, how = "NO", fmt.Sprintf("no check failed in %d crashed states", r.tried)
			missed = append(missed, fmt.Sprintf("#%d %s", r.k, r.what))
		}
		if len(how) > 150 {
			how = how[:150] + "…"
		}
		fmt.Fprintf(&table, "%4d  %-44s  %-8s  %s\n", r.k, r.what, verdict, how)
	}
	t.Log(table.String())
	t.Logf("%d mutations in %v", len(ks), time.Since(start).Round(time.Millisecond))
	if len(missed) > 0 {
		t.Errorf("disabling these syncs went unnoticed — each is needless or untested: %s", strings.Join(missed, "; "))
	}
}

// mutate runs the workload with sync call k made a no-op and looks for a
// crash of one of its snapshots (from the one after call k on) that fails
// a check: durable-only first, then up to seeds unkind crashes.
func mutate(t *testing.T, k int, what string, seeds int) mutResult {
	res := mutResult{k: k, what: what}
	run := plWorkload(t, k)
	require.Equal(t, 1, run.faulty.Fired(vfs.OpAnySync), "sync call %d was silenced", k)
	c := &plChecker{run: run}
	var points []plPoint
	var index []int
	for j, p := range run.points {
		if p.syncs > k { // taken after the silenced call; earlier ones are the unmutated run's
			points = append(points, p)
			index = append(index, j)
		}
	}
	seen := make([]map[[32]byte]bool, len(points))
	try := func(j int, name string, crashed *vfs.Sim, seed uint64) bool {
		fp := plFingerprint(crashed)
		if seen[j][fp] {
			return false
		}
		seen[j][fp] = true
		res.tried++
		err := c.check(crashed, points[j].ack, plRand(index[j], 1000+seed))
		if err == nil {
			return false
		}
		res.found, res.err = true, err
		res.at = fmt.Sprintf("%s, %s", points[j].describe(), name)
		var v *plViolation
		if errors.As(err, &v) {
			res.check, res.err = v.check, v.err
		}
		return true
	}
	// Durable-only crashes of every snapshot first: they find a lost sync
	// of data or of a name at once. Then unkind ones, seed by seed.
	for j, p := range points {
		seen[j] = map[[32]byte]bool{}
		if try(j, "durable-only", p.sim.CrashDurableOnly(), 0) {
			return res
		}
	}
	for seed := range uint64(seeds) {
		for j, p := range points {
			if try(j, fmt.Sprintf("seed %d", seed), p.sim.Crash(plRand(index[j], seed)), seed) {
				return res
			}
		}
	}
	return res
}
