package crashtest

import (
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionstore/sessionstore/internal/vfs"
)

// Point is the file system at one moment of a workload, with what the
// workload had been told was done by then: every crash of Sim must still
// show what Ack says.
type Point[A any] struct {
	// Sim is a snapshot (vfs.Sim.Snapshot), pending operations included:
	// crash it as often as needed.
	Sim *vfs.Sim
	Ack A
	// Op and Name are the sync about to take effect, for a point taken at
	// a sync; Op is "" for one taken by Mark.
	Op   vfs.Op
	Name string
	// Step is the workload's step (Recorder.Step) when the point was
	// taken.
	Step string
	// Syncs is the number of sync calls made through the Faulty when the
	// point was taken, the current one included.
	Syncs int
	// Index is the point's position among the run's points; it seeds the
	// point's crashes.
	Index int
}

// Describe names the point for messages and tables.
func (p Point[A]) Describe() string {
	if p.Op == "" {
		return p.Step
	}
	return describeSync(p.Step, p.Op, p.Name)
}

func describeSync(step string, op vfs.Op, name string) string {
	s := string(op) + " " + Pattern(name)
	if step != "" {
		s = step + ": " + s
	}
	return s
}

// Recorder runs under a workload: it owns the Sim and the Faulty over it
// that the store under test writes through, and takes a Point at each
// sync point. The workload keeps Ack up to date with what it has been told
// is done, and Step with what it is doing; both are copied into each
// point. A workload is one goroutine: the fields are not locked.
type Recorder[A any] struct {
	Sim *vfs.Sim
	FS  *vfs.Faulty
	Ack A
	// Step names what the workload is doing, for messages.
	Step string
	// Capture, when set, decides which sync points become points (nil:
	// all of them). Every sync is described in Syncs either way.
	Capture func(op vfs.Op, name string) bool
	// OnSync, when set, runs at each sync point before the point is
	// taken, and may update Ack (a workload that learns at a sync what it
	// is in the middle of).
	OnSync func(op vfs.Op, name string)

	mu     sync.Mutex
	points []Point[A]
	syncs  []string
	// faulted is how many placeholders syncs holds for sync calls that a
	// rule of FS stopped before the Sim.
	faulted int
}

// Start returns a Recorder on a fresh Sim, taking points from now on. With
// mutate ≥ 0, sync call number mutate (counting every Sync, Datasync and
// SyncDir made through FS, from 0) does nothing and reports success.
func Start[A any](mutate int) *Recorder[A] {
	sim := vfs.NewSim()
	r := &Recorder[A]{Sim: sim, FS: vfs.NewFaulty(sim)}
	if mutate >= 0 {
		r.FS.Inject(vfs.Fault{Op: vfs.OpAnySync, After: mutate, Silent: true})
	}
	sim.OnSync(r.onSync)
	return r
}

// Stop stops taking points.
func (r *Recorder[A]) Stop() { r.Sim.OnSync(nil) }

func (r *Recorder[A]) onSync(op vfs.Op, name string) {
	if r.OnSync != nil {
		r.OnSync(op, name)
	}
	calls := r.FS.Calls(vfs.OpAnySync)
	fired := r.FS.Fired(vfs.OpAnySync)
	r.mu.Lock()
	defer r.mu.Unlock()
	// A call a rule stopped never comes here: it is described by a
	// placeholder where it would have been. That is counted by the rules
	// fired, not by the calls made, so that syncs made at once on several
	// goroutines (a new session's blobs) are each described once.
	for ; r.faulted < fired; r.faulted++ {
		r.syncs = append(r.syncs, "(faulted: did not reach the Sim)")
	}
	r.syncs = append(r.syncs, describeSync(r.Step, op, name))
	if r.Capture != nil && !r.Capture(op, name) {
		return
	}
	r.add(Point[A]{Sim: r.Sim.Snapshot(), Ack: r.Ack, Op: op, Name: name, Step: r.Step, Syncs: calls})
}

// Mark takes a point now, not at a sync, named step (Describe).
func (r *Recorder[A]) Mark(step string) {
	p := Point[A]{Sim: r.Sim.Snapshot(), Ack: r.Ack, Step: step, Syncs: r.FS.Calls(vfs.OpAnySync)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(p)
}

func (r *Recorder[A]) add(p Point[A]) {
	p.Index = len(r.points)
	r.points = append(r.points, p)
}

// Points returns the points taken so far, in order.
func (r *Recorder[A]) Points() []Point[A] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.points
}

// Syncs describes each sync call made so far (Point.Describe), by its
// index among FS's: a call a fault stopped before the Sim is described as
// such.
func (r *Recorder[A]) Syncs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncs
}

// After returns the points taken once sync call k (counting from 0) was
// made: in a run with call k silenced, which never reaches the Sim, the
// points after it, which are those that may show it.
func (r *Recorder[A]) After(k int) []Point[A] {
	var out []Point[A]
	for _, p := range r.Points() {
		if p.Syncs > k {
			out = append(out, p)
		}
	}
	return out
}

// Clock returns a clock that starts at start and advances a millisecond at
// each reading: a workload on it writes the same records, and so crashes
// into the same states, on every run.
func Clock(start time.Time) func() time.Time {
	var tick atomic.Int64
	return func() time.Time { return start.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
}

// Pattern replaces the random and time parts of a file name (16 hex
// digits, a UTC timestamp) with "*", so that a name reads the same from
// run to run.
func Pattern(name string) string { return varying.ReplaceAllString(name, "*") }

var varying = regexp.MustCompile(`[0-9a-f]{16}|[0-9]{8}T[0-9.]+Z`)
