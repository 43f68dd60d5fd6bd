package crashtest_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/vfs"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

// ack is what the toy workload was told: revision rev of file "f" is
// durable, and rev+1 may be on its way.
type ack struct {
	rev      int
	inflight bool
}

func content(rev int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("revision %d\n", rev)), 1000*rev)
}

// workload replaces file "f" three times with vfs.WriteFileAtomic,
// durable unless lax.
func workload(t testing.TB, mutate int, lax bool) *crashtest.Recorder[ack] {
	rec := crashtest.Start[ack](mutate)
	defer rec.Stop()
	for rev := 1; rev <= 3; rev++ {
		rec.Step = fmt.Sprintf("write %d", rev)
		rec.Ack.inflight = true
		require.NoError(t, vfs.WriteFileAtomic(rec.FS, ".", "f", content(rev), 0o600, !lax, ".x"))
		rec.Ack.rev, rec.Ack.inflight = rev, false
	}
	rec.Mark("end")
	return rec
}

// check requires the acknowledged revision of "f", or the one in flight.
func check(crashed *vfs.Sim, p crashtest.Point[ack], _ crashtest.Crash, _ *rand.Rand) error {
	if p.Ack.rev == 0 {
		return nil
	}
	b, err := crashed.ReadFile("f")
	if err != nil {
		return crashtest.Violate("acknowledged", "revision %d is lost: %w", p.Ack.rev, err)
	}
	if bytes.Equal(b, content(p.Ack.rev)) || p.Ack.inflight && bytes.Equal(b, content(p.Ack.rev+1)) {
		return nil
	}
	return crashtest.Violate("content", "f holds %d bytes, not revision %d", len(b), p.Ack.rev)
}

func TestRecorder(t *testing.T) {
	rec := workload(t, -1, false)
	points := rec.Points()
	require.Len(t, points, 3*2+1, "two syncs per write, and the end")
	require.Equal(t, []string{
		"write 1: sync .f.x.tmp", "write 1: syncdir .",
		"write 2: sync .f.x.tmp", "write 2: syncdir .",
		"write 3: sync .f.x.tmp", "write 3: syncdir .",
	}, rec.Syncs())
	for i, p := range points {
		require.Equal(t, i, p.Index)
	}
	require.Equal(t, "write 2: syncdir .", points[3].Describe())
	require.Equal(t, ack{rev: 1, inflight: true}, points[3].Ack)
	require.Equal(t, 4, points[3].Syncs)
	require.Equal(t, "end", points[6].Describe())
	require.Len(t, rec.After(4), 3, "the points at the fifth and sixth syncs, and the end")
	mutated := workload(t, 4, false)
	require.Len(t, mutated.Points(), 6, "the fifth sync did not reach the Sim")
	require.Len(t, mutated.After(4), 2, "the points at the sixth sync and the end")
}

func TestSweepPassesADurableWorkload(t *testing.T) {
	rec := workload(t, -1, false)
	states, distinct := crashtest.Sweep(t, rec.Points(), 20, check)
	require.Equal(t, 7*22, states)
	require.Less(t, distinct, states, "alike states are checked once")
}

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestSweepFailsALaxWorkload(t *testing.T) {
	rec := workload(t, -1, true)
	require.Len(t, rec.Points(), 1, "no sync: only the end")
	r := &recorder{TB: t}
	crashtest.Sweep(r, rec.Points(), 5, check)
	require.NotEmpty(t, r.errors)
	require.Contains(t, r.errors[0], "crash at point 0 (end), durable-only: acknowledged: revision 3 is lost")
}

func TestMutateCatchesEverySilencedSync(t *testing.T) {
	base := workload(t, -1, false)
	ks := []int{0, 1, 2, 3, 4, 5}
	res := crashtest.Mutate(t, base, ks, 50, 0, func(t *testing.T, k int) (*crashtest.Recorder[ack], crashtest.Check[ack]) {
		return workload(t, k, false), check
	})
	for _, m := range res {
		require.True(t, m.Found, "sync %d (%s)", m.K, m.What)
		require.NotEmpty(t, m.Check)
	}
}

func TestSearchFindsNothingWithoutAMutation(t *testing.T) {
	rec := workload(t, -1, false)
	m := crashtest.Search(0, rec.After(0), 20, 2, check)
	require.False(t, m.Found, "%s: %v", m.At, m.Err)
	require.Positive(t, m.Tried)
}

func TestCrashes(t *testing.T) {
	cs := crashtest.Crashes(2)
	require.Equal(t, []string{"durable-only", "all", "seed 0", "seed 1"}, []string{cs[0].String(), cs[1].String(), cs[2].String(), cs[3].String()})
	require.Equal(t, "pl-a/forensic/tail-108727-*.bin", crashtest.Pattern("pl-a/forensic/tail-108727-0123456789abcdef.bin"))
	epoch := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := crashtest.Clock(epoch)
	require.Equal(t, epoch.Add(time.Millisecond), clock())
	require.Equal(t, epoch.Add(2*time.Millisecond), clock())
}

func TestMet(t *testing.T) {
	r := &recorder{TB: t}
	crashtest.Met(r, map[string]int64{"a torn tail": 3, "a lost name": 0, "an empty file": 0})
	require.Equal(t, []string{"no crashed state had a lost name", "no crashed state had an empty file"}, r.errors)
}
