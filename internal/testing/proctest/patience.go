package proctest

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// A wait for a child (a line, an acknowledgement, an exit) is bounded by
// the work, not by the clock: it lasts as long as the children of the test
// binary make progress — print a line, run on a CPU, wait for one (a
// loaded machine), or wait for a disk — and fails when none of them has
// for Within (a hang: a deadlock, a child blocked on a peer that never
// answers). However long the children keep working, a wait ends in time
// for the test binary's deadline (go test -timeout), failing with what it
// waited for and the child's standard error rather than letting the
// binary panic; without a deadline, after ceilingFactor times Within.
// Where the system does not say how much its processes ran (not Linux),
// only lines count as progress there, and a wait lasts until that
// deadline.

// deadlineMargin is how long before the test binary's deadline a wait
// gives up, leaving the test that time to report and clean up.
const deadlineMargin = 10 * time.Second

// ceilingFactor bounds a wait, in Withins, when the test binary has no
// deadline (-test.timeout 0).
const ceilingFactor = 20

// busyShare is the share of one CPU the children together must have run
// (or waited to run) during a sample for the sample to count as progress:
// an idle race-enabled Go process still wakes now and then.
const busyShare = 100 // 1/100: 1%

// live is every child of this test binary not yet reaped: a child may be
// waiting for another (a lock the other holds), so the work of any counts.
var live = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

func register(pid int) {
	live.Lock()
	live.pids[pid] = true
	live.Unlock()
}

func unregister(pid int) {
	live.Lock()
	delete(live.pids, pid)
	live.Unlock()
}

func livePIDs() []int {
	live.Lock()
	defer live.Unlock()
	pids := make([]int, 0, len(live.pids))
	for pid := range live.pids {
		pids = append(pids, pid)
	}
	return pids
}

// patience is one wait's bound (see above).
type patience struct {
	within  time.Duration
	start   time.Time
	hard    time.Time // the wait gives up here whatever the work
	hardWhy string
	last    time.Time // the last progress seen
	work    work      // the children's at the last sample
	sampled time.Time
	period  time.Duration // between samples
}

// deadliner is a testing.TB that knows the test binary's deadline
// (*testing.T does).
type deadliner interface {
	Deadline() (time.Time, bool)
}

func newPatience(tb testing.TB, within time.Duration) *patience {
	now := time.Now()
	p := &patience{within: within, start: now, last: now, sampled: now,
		period: min(max(within/8, 50*time.Millisecond), time.Second)}
	p.hard, p.hardWhy = now.Add(ceilingFactor*within), fmt.Sprintf("the children kept working for %v, %d times the stall limit, and the test binary has no deadline", ceilingFactor*within, ceilingFactor)
	if d, ok := tb.(deadliner); ok {
		if dl, ok := d.Deadline(); ok {
			p.hard, p.hardWhy = dl.Add(-deadlineMargin), fmt.Sprintf("the test binary's deadline (%s) is %v away", dl.Format(time.TimeOnly), deadlineMargin)
		}
	}
	p.work = childWork(livePIDs())
	return p
}

// progressed records a sign of progress seen by the caller (a line).
func (p *patience) progressed() { p.last = time.Now() }

// tick returns how long to wait before the next check.
func (p *patience) tick() time.Duration {
	return max(min(p.period, time.Until(p.hard)), time.Millisecond)
}

// check samples the children's work and returns why the wait must end,
// or "" to go on.
func (p *patience) check() string {
	now := time.Now()
	if now.Sub(p.sampled) >= p.period || !now.Before(p.hard) {
		w := childWork(livePIDs())
		if w.known && p.work.known && ((w.ran-p.work.ran)*busyShare >= now.Sub(p.sampled) || w.disk) {
			p.last = now
		}
		p.work, p.sampled = w, now
	}
	switch {
	case !now.Before(p.hard):
		return fmt.Sprintf("gave up after %v: %s", now.Sub(p.start).Round(time.Millisecond), p.hardWhy)
	case p.work.known && now.Sub(p.last) >= p.within:
		return fmt.Sprintf("no progress for %v (no line, and no child of the test ran, waited to run or waited for a disk): a hang", p.within)
	}
	return ""
}

// work is what the children of the test binary have done: how long their
// threads ran on a CPU or waited in a run queue, in all, and whether one
// is waiting for a disk now. known is false where the system does not say.
type work struct {
	ran   time.Duration
	disk  bool
	known bool
}
