package crashtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore/internal/vfs"
)

// Mutant is what silencing one sync call did.
type Mutant struct {
	K     int    // the sync call made a no-op
	What  string // what it synced, in the unmutated run
	Found bool   // some crashed state failed a check
	At    string // the point whose crash showed it, and the crash
	Check string // the check that failed (Violation.Check)
	Err   error
	Tried int // distinct crashed states checked
}

// Search looks for a crashed state that fails check among the crashes of
// points (a run's points after its silenced sync call k, Recorder.After):
// the DurableOnly crash of each point first (a lost sync of data or of a
// name shows at once), then Unkind ones, seed by seed up to seeds, of the
// near points nearest the silenced call and then of all of them (near 0:
// all from the start). A lost sync of a directory that a later sync of the
// same directory covers shows only when an unkind crash keeps a later
// operation and drops the earlier one, near the silenced call. Each
// distinct state of a point is checked once; the search stops at the
// first failure.
func Search[A any](k int, points []Point[A], seeds, near int, check Check[A]) Mutant {
	res := Mutant{K: k}
	seen := make([]map[[32]byte]bool, len(points))
	for j := range seen {
		seen[j] = map[[32]byte]bool{}
	}
	try := func(j int, how Crash) bool {
		p := points[j]
		crashed := how.Apply(p.Sim, p.Index)
		fp := Fingerprint(crashed)
		if seen[j][fp] {
			return false
		}
		seen[j][fp] = true
		res.Tried++
		err := check(crashed, p, how, checkRand(p.Index, how))
		if err == nil {
			return false
		}
		res.Found, res.Err = true, err
		res.At = fmt.Sprintf("%s, %s", p.Describe(), how)
		var v *Violation
		if errors.As(err, &v) {
			res.Check, res.Err = v.Check, v.Err
		}
		return true
	}
	for j := range points {
		if try(j, Crash{Kind: DurableOnly}) {
			return res
		}
	}
	passes := []int{len(points)}
	if near > 0 && near < len(points) {
		passes = []int{near, len(points)}
	}
	for _, n := range passes {
		for seed := range uint64(seeds) {
			for j := range points[:n] {
				if try(j, Crash{Kind: Unkind, Seed: seed}) {
					return res
				}
			}
		}
	}
	return res
}

// Mutate proves that each sync call in ks matters. For each call k, in a
// parallel subtest, run runs the workload again with call k silenced
// (Start(k)) and returns its Recorder and the check that judges it, and
// Search (with seeds and near) looks for a crashed state that fails the
// check. Mutate logs a table of which check caught each silenced call and
// fails t naming every call whose loss went unnoticed: such a sync is
// needless, or no test guards it. base is the unmutated run: its Syncs
// name the calls.
func Mutate[A any](t *testing.T, base *Recorder[A], ks []int, seeds, near int, run func(t *testing.T, k int) (*Recorder[A], Check[A])) []Mutant {
	t.Helper()
	start := time.Now()
	syncs := base.Syncs()
	if n := base.FS.Calls(vfs.OpAnySync); len(syncs) != n {
		t.Fatalf("crashtest: %d sync calls, %d described: the last one did not reach the Sim", n, len(syncs))
	}
	fired := base.FS.Fired(vfs.OpAnySync)
	results := make([]Mutant, len(ks))
	t.Run("mutants", func(t *testing.T) {
		for i, k := range ks {
			t.Run(fmt.Sprintf("sync=%02d", k), func(t *testing.T) {
				t.Parallel()
				results[i] = Mutant{K: k, What: syncs[k]}
				rec, check := run(t, k)
				if got := rec.FS.Fired(vfs.OpAnySync); got != fired+1 {
					t.Fatalf("crashtest: sync call %d was not silenced (%d faults fired, want %d)", k, got, fired+1)
				}
				results[i] = Search(k, rec.After(k), seeds, near, check)
				results[i].What = syncs[k]
			})
		}
	})

	width := len("operation")
	for _, r := range results {
		width = max(width, len(r.What))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "sync mutation table (%d seeds per point at most):\n", seeds)
	fmt.Fprintf(&table, "%4s  %-*s  %-8s  %s\n", "sync", width, "operation", "detected", "first failed check (point, crash): error")
	var missed []string
	for _, r := range results {
		verdict, how := "yes", fmt.Sprintf("%s (%s): %v", r.Check, r.At, r.Err)
		if !r.Found {
			verdict, how = "NO", fmt.Sprintf("no check failed in %d crashed states", r.Tried)
			missed = append(missed, fmt.Sprintf("#%d %s", r.K, r.What))
		}
		if len(how) > 160 {
			how = how[:160] + "…"
		}
		fmt.Fprintf(&table, "%4d  %-*s  %-8s  %s\n", r.K, width, r.What, verdict, how)
	}
	t.Log(table.String())
	t.Logf("%d mutations in %v", len(ks), time.Since(start).Round(time.Millisecond))
	if len(missed) > 0 {
		t.Errorf("disabling these syncs went unnoticed — each is needless or untested: %s", strings.Join(missed, "; "))
	}
	return results
}
