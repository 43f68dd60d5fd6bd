package crashtest

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sessionstore/sessionstore/internal/vfs"
)

// Violation is a check that failed on a crashed state.
type Violation struct {
	Check string // the check's name, for tables and for tests of the checker
	Err   error
}

func (v *Violation) Error() string { return v.Check + ": " + v.Err.Error() }

func (v *Violation) Unwrap() error { return v.Err }

// Violate returns a *Violation of check, its error formatted as
// fmt.Errorf does (%w included).
func Violate(check, format string, args ...any) error {
	return &Violation{Check: check, Err: fmt.Errorf(format, args...)}
}

// CrashKind is a way of crashing a point.
type CrashKind int

const (
	DurableOnly CrashKind = iota // nothing pending survives (vfs.Sim.CrashDurableOnly)
	All                          // everything pending survives (vfs.Sim.CrashAll)
	Unkind                       // the unkind model, seeded (vfs.Sim.Crash)
)

// Crash is one crash of a point.
type Crash struct {
	Kind CrashKind
	Seed uint64 // for Unkind
}

func (c Crash) String() string {
	switch c.Kind {
	case DurableOnly:
		return "durable-only"
	case All:
		return "all"
	}
	return "seed " + strconv.FormatUint(c.Seed, 10)
}

// Crashes lists the crashes Sweep makes of each point: DurableOnly, All,
// and seeds Unkind ones.
func Crashes(seeds int) []Crash {
	out := []Crash{{Kind: DurableOnly}, {Kind: All}}
	for seed := range uint64(seeds) {
		out = append(out, Crash{Kind: Unkind, Seed: seed})
	}
	return out
}

// Apply crashes sim, the snapshot of point number index, this way; an
// unkind crash is seeded by the point's index and the crash's seed.
func (c Crash) Apply(sim *vfs.Sim, index int) *vfs.Sim {
	switch c.Kind {
	case DurableOnly:
		return sim.CrashDurableOnly()
	case All:
		return sim.CrashAll()
	}
	return sim.Crash(Rand(index, c.Seed))
}

// Rand returns the generator of crash seed of point k.
func Rand(k int, seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x706c0000+uint64(k)))
}

// Check judges crashed, a state after crash how of point p: nil, or the
// first violation of what must hold (a *Violation). r drives any further
// crash the check makes (after its own writes, say); it is seeded by the
// point and the crash, so a failure repeats.
type Check[A any] func(crashed *vfs.Sim, p Point[A], how Crash, r *rand.Rand) error

// checkRand is the r a Check of crash how of point k gets.
func checkRand(k int, how Crash) *rand.Rand { return Rand(k, 1000+how.Seed) }

// Sweep crashes every point in every way Crashes(seeds) lists and checks
// each distinct crashed state of a point once (many seeds crash a point
// with few pending writes into the same state), one goroutine per CPU.
// Each violation fails t; the first ten are reported. It returns the
// number of crashed states made and of those checked.
func Sweep[A any](t testing.TB, points []Point[A], seeds int, check Check[A]) (states, distinct int) {
	t.Helper()
	type failure struct {
		point int
		crash Crash
		err   error
	}
	var (
		mu       sync.Mutex
		failures []failure
		made     atomic.Int64
		checked  atomic.Int64
	)
	forEach(len(points), func(k int) {
		p := points[k]
		seen := map[[32]byte]bool{}
		for _, how := range Crashes(seeds) {
			crashed := how.Apply(p.Sim, p.Index)
			made.Add(1)
			fp := Fingerprint(crashed)
			if seen[fp] {
				continue
			}
			seen[fp] = true
			checked.Add(1)
			if err := check(crashed, p, how, checkRand(p.Index, how)); err != nil {
				mu.Lock()
				failures = append(failures, failure{k, how, err})
				mu.Unlock()
			}
		}
	})
	for i, f := range failures {
		if i == 10 {
			t.Errorf("... and %d more", len(failures)-10)
			break
		}
		t.Errorf("crash at point %d (%s), %s: %v", points[f.point].Index, points[f.point].Describe(), f.crash, f.err)
	}
	return int(made.Load()), int(checked.Load())
}

// Met fails t for each kind of crashed state of which a sweep met none:
// counts maps what the checks are about ("a torn tail") to how many
// crashed states had it. A check that never meets what it is about proves
// nothing.
func Met(t testing.TB, counts map[string]int64) {
	t.Helper()
	for _, what := range slices.Sorted(maps.Keys(counts)) {
		if counts[what] == 0 {
			t.Errorf("no crashed state had %s", what)
		}
	}
}

// forEach runs fn on 0..n-1 with one worker per CPU.
func forEach(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

// Fingerprint hashes every name and file content of a state.
func Fingerprint(s *vfs.Sim) [32]byte {
	h := sha256.New()
	for _, name := range s.Tree() {
		_, _ = fmt.Fprintf(h, "%s\x00", name) // hash.Hash writes never fail
		if !strings.HasSuffix(name, "/") {
			b, _ := s.ReadFile(name)
			_, _ = fmt.Fprintf(h, "%d\x00", len(b))
			h.Write(b)
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
