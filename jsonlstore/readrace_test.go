package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const (
	// raceRounds is the number of holder processes TestReadersRaceHolder
	// kills; raceRoundsEnv overrides it.
	raceRounds    = 50
	raceRoundsEnv = "JSONLSTORE_RACE_ROUNDS"
	// raceTimeBound stops the holders earlier on a slow machine.
	raceTimeBound = 45 * time.Second
	// raceReaders is the number of reading goroutines in the test process
	// (one more helper process reads too).
	raceReaders = 3
	// raceKillEvery: a holder process is killed during one of its first
	// raceKillEvery acquisitions.
	raceKillEvery = 3
)

// TestReadersRaceHolder runs holder processes that acquire one session,
// append 1 to 4 deterministic revisions and release, again and again; every
// few acquisitions the test kills the holder with SIGKILL in the middle of
// an append (after a random delay, or as soon as the log grows under a
// large write) and starts another, which must recover: find the dead
// holder stale, keep every acknowledged revision, and truncate any torn
// tail. Meanwhile raceReaders goroutines here and one reader process call
// Load, History, LoadRevision and List without a lease, continuously.
// No read may fail — in particular none may report corruption, the false
// alarm a reader racing a truncation could raise — and every record any
// reader gets must be exactly what the generator wrote for its revision.
func TestReadersRaceHolder(t *testing.T) {
	rounds := proctest.EnvInt(t, raceRoundsEnv, raceRounds)
	seed := procSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x72616365))
	dir := t.TempDir()
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	verifyAtCleanup(t, st)
	t.Cleanup(func() { st.Close() })
	const id = session.SessionID("race-1")
	logFile := filepath.Join(dir, filepath.FromSlash(layout.LogPath(id)))

	snap, err := procSnapshot(id, seed, 1)
	require.NoError(t, err)
	w, err := st.Create(t.Context(), snap, sessionstore.AcquireOptions{Label: "race-test"})
	require.NoError(t, err)
	require.NoError(t, w.Release(t.Context()))

	// Readers in this process.
	ctx, stopReaders := context.WithCancel(t.Context())
	var (
		wg       sync.WaitGroup
		ops      [4]atomic.Int64 // Load, History, LoadRevision, List
		errMu    sync.Mutex
		readErrs []error
		// pause, while the test aims a kill at a write, holds a channel
		// closed when it is done: the readers here do not start a new
		// read meanwhile, or the poll that aims would wait for a CPU among
		// them and miss the write.
		pause atomic.Pointer[chan struct{}]
	)
	for i := range raceReaders {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for op := i; ctx.Err() == nil; op++ {
				if p := pause.Load(); p != nil {
					select {
					case <-*p:
					case <-ctx.Done():
						return
					}
				}
				if err := procReadOnce(ctx, st, id, seed, r, op); err != nil {
					if ctx.Err() == nil {
						errMu.Lock()
						readErrs = append(readErrs, fmt.Errorf("reader %d: %w", i, err))
						errMu.Unlock()
					}
					return
				}
				ops[op%4].Add(1)
			}
		})
	}
	defer func() {
		stopReaders()
		wg.Wait()
	}()
	// And one in another process (at a low priority, see procNice).
	reader := startProc(t, procModeReader, procEnv(dir, id, seed)...)
	require.Equal(t, "reading", reader.Next(t))

	// Holders.
	var (
		hs       = raceHolders{t: t, id: id}
		holder   *proctest.Child
		killAt   int
		deadline = time.Now().Add(raceTimeBound)
		start    = time.Now()
	)
	for hs.kills < rounds && time.Now().Before(deadline) {
		if holder == nil {
			holder = startProc(t, procModeHolder, procEnv(dir, id, seed)...)
			killAt = hs.acquisitions + 1 + rng.IntN(raceKillEvery)
		}
		a := hs.line(holder, holder.Next(t))
		if a == nil || hs.acquisitions < killAt {
			continue
		}
		// Kill this holder during its current acquisition.
		if rng.IntN(2) == 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(killDelayMax))))
			holder.Kill(t)
		} else {
			resume := make(chan struct{})
			pause.Store(&resume)
			killAimAtLargeWrite(t, holder, logFile, id, seed, a.Rev)
			holder.Kill(t)
			pause.Store(nil)
			close(resume)
		}
		hs.killed(holder)
		holder = nil
	}
	if holder != nil { // the time bound stopped the loop
		holder.Stop(t)
		hs.drain(holder)
	}
	elapsed := time.Since(start)
	// A last holder, here: it recovers after the last kill, if the loop
	// ended with one, while the readers still run.
	w, err = st.TryAcquire(t.Context(), id, sessionstore.AcquireOptions{Label: "race-test"})
	require.NoError(t, err)
	rep := w.Recovery()
	hs.line(nil, fmt.Sprintf("acquired gen=%d rev=%d tail=%d prev=%s", w.Generation(), w.Revision(), rep.TailBytes, rep.Previous.State))
	require.NoError(t, w.Release(t.Context()))

	stopReaders()
	wg.Wait()
	reader.Stop(t)
	l := reader.Next(t)
	require.True(t, strings.HasPrefix(l, "reads "), "reader process: %q", l)
	errMu.Lock()
	for _, err := range readErrs {
		var ce *sessionstore.CorruptionError
		if errors.As(err, &ce) {
			t.Errorf("false corruption reported to a reader: %v", err)
		} else {
			t.Errorf("read failed: %v", err)
		}
	}
	errMu.Unlock()

	// The log holds every acknowledged revision, each one intact.
	hist, err := procCheckHistory(t.Context(), st, id, seed, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, hist.Latest, hs.maxAck)
	kinds := logKinds(t, logFile)
	require.Positive(t, kinds[record.KindDelta], "the readers raced delta records too: %v", kinds)
	lease, err := st.Lease(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, summary.LeaseFree, lease.State)

	t.Logf("%d acquisitions by holder processes in %s, %d holders killed (%d left a stale lease), tails removed in %d recoveries; latest revision %d (generation %d)",
		hs.acquisitions, elapsed.Round(time.Millisecond), hs.kills, hs.stale, hs.tails, hist.Latest, hist.Generation)
	t.Logf("reads in this process: %d Load, %d History, %d LoadRevision, %d List; reader process: %s",
		ops[0].Load(), ops[1].Load(), ops[2].Load(), ops[3].Load(), l)
	require.GreaterOrEqual(t, hs.kills, min(rounds, 10), "too few holders killed in %s", raceTimeBound)
}

// raceHolders follows the lines of the holder processes and checks the
// acquisitions they report.
type raceHolders struct {
	t  *testing.T
	id session.SessionID

	acquisitions int
	kills        int
	stale        int // acquisitions that found a dead holder's lease
	tails        int
	lastGen      uint64 // generation of the latest acquisition
	rev          uint64 // the latest revision known committed: at the last acquisition or release, or the last acknowledgment
	maxAck       uint64
	afterKill    bool // the next acquisition follows a kill
	// trace keeps the last events, for failure messages.
	trace []string
}

func (s *raceHolders) event(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf(format, args...))
	if len(s.trace) > 40 {
		s.trace = s.trace[1:]
	}
}

func (s *raceHolders) events() string { return strings.Join(s.trace, "\n") }

// line handles one line of holder h (nil: the test itself) and returns
// the acquisition it reports, if it is one.
func (s *raceHolders) line(h *proctest.Child, l string) *procAcquired {
	t := s.t
	t.Helper()
	pid := 0
	if h != nil {
		pid = h.PID()
	}
	s.event("pid %d: %s", pid, l)
	verb, _, _ := strings.Cut(l, " ")
	switch verb {
	case "acquired":
		a := procParseAcquired(t, l, "acquired")
		s.acquisitions++
		require.Greater(t, a.Gen, s.lastGen, "acquisition %d: generations must strictly increase", s.acquisitions)
		s.lastGen = a.Gen
		if s.afterKill {
			// Stale, unless the kill landed inside Release (after lease.json
			// said released) or inside the next Acquire.
			require.Contains(t, []summary.LeaseState{summary.LeaseStale, summary.LeaseFree}, a.Prev, "acquisition %d after a kill; last events:\n%s", s.acquisitions, s.events())
			if a.Prev == summary.LeaseStale {
				s.stale++
			}
			// At most one whole record beyond the last acknowledged one:
			// the append that was killed between its write and its ack.
			require.GreaterOrEqual(t, a.Rev, s.rev, "acquisition %d after a kill: an acknowledged revision was lost; last events:\n%s", s.acquisitions, s.events())
			require.LessOrEqual(t, a.Rev, s.rev+1, "acquisition %d after a kill; last events:\n%s", s.acquisitions, s.events())
			if a.Tail > 0 {
				s.tails++
			}
		} else {
			if s.acquisitions == 1 {
				s.rev = 1 // created by the test
			}
			require.Equal(t, summary.LeaseFree, a.Prev, "acquisition %d after a release; last events:\n%s", s.acquisitions, s.events())
			require.Equal(t, s.rev, a.Rev, "acquisition %d after a release; last events:\n%s", s.acquisitions, s.events())
			require.Zero(t, a.Tail, "acquisition %d after a release; last events:\n%s", s.acquisitions, s.events())
		}
		s.afterKill = false
		s.rev = a.Rev
		return &a
	case "released":
		m := proctest.Fields(t, l, "released")
		require.Equal(t, s.lastGen, proctest.Uint(t, m, "gen"))
		s.rev = proctest.Uint(t, m, "rev")
		if h != nil {
			_, last := h.Acks()
			s.maxAck = max(s.maxAck, last)
		}
	case "done":
	default:
		require.FailNow(t, "unexpected holder line", "%q", l)
	}
	return nil
}

// drain handles the lines a finished holder left unread.
func (s *raceHolders) drain(h *proctest.Child) {
	for {
		l, ok := h.TryNext()
		if !ok {
			return
		}
		s.line(h, l)
	}
}

// killed records that holder h was killed (and reaped).
func (s *raceHolders) killed(h *proctest.Child) {
	s.drain(h)
	n, last := h.Acks()
	s.event("pid %d: killed after %d acks, the last of revision %d", h.PID(), n, last)
	s.rev = max(s.rev, last)
	s.maxAck = max(s.maxAck, last)
	s.kills++
	s.afterKill = true
}
