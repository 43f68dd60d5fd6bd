package jsonlstore

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// compactChild runs one of the compaction children (helper modes
// procModeCompact, procModeBenchCompact and procModeBenchRaw), which open
// the store themselves, on the session procEnv names.
func compactChild(ctx context.Context, mode string) error {
	dir, id := os.Getenv(procDirEnv), session.SessionID(os.Getenv(procIDEnv))
	switch mode {
	case procModeBenchCompact:
		return compactBenchCompact(ctx, dir, id)
	case procModeBenchRaw:
		return compactBenchRaw(dir, id)
	}
	return compactKillChild(ctx, dir, id)
}

// TestCompactKilled kills, round after round, a child process that
// compacts a session standalone (Store.Compact with KeepLast 3 to 7, as
// `compact --keep-last N` does) on a real store, with SIGKILL at a random
// moment: at once, or after a random delay of up to one and a half
// compaction times (measured from the children that finished), so that
// the kills land on every step — writing the segment, publishing it, the
// manifest, the new log, its rename. Before each child, the parent
// appends compactKillAppends revisions (plSnapshot variant 0), so every
// compaction has something to trim.
//
// After each kill, before anyone recovers anything: Load returns the
// latest revision; History yields 1..latest exactly once, in order, each
// the snapshot appended as it (generations and times never decreasing);
// LoadRevision returns a sample of them; the log starts where the old
// state or the new one starts. Then a new standalone compaction completes
// and reclaims exactly the leftovers (unlisted segments, listed ones
// overlapping the log, temporary files; temporary logs are swept by its
// lease acquisition), after which archive/ holds only the manifest and
// its segments.
func TestCompactKilled(t *testing.T) {
	rounds := proctest.EnvInt(t, compactKillRoundsEnv, compactKillRounds)
	seed := procSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x636b696c))
	ctx := t.Context()
	dir := t.TempDir()
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	verifyAtCleanup(t, st)
	t.Cleanup(func() { st.Close() })
	const id = session.SessionID("ck")

	w, err := st.Create(ctx, plSnapshot(id, 1, 0), sessionstore.AcquireOptions{Label: "parent"})
	require.NoError(t, err)
	latest := uint64(1)
	appendTo := func(w sessionstore.Writer, to uint64) {
		for ; latest < to; latest++ {
			got, err := w.Append(ctx, latest, plSnapshot(id, latest+1, 0))
			require.NoError(t, err)
			require.Equal(t, latest+1, got)
		}
	}
	appendTo(w, compactKillStart)
	require.NoError(t, w.Release(ctx))

	var (
		s        compactKillStats
		duration time.Duration // of the last compaction a child finished
		start    = time.Now()
	)
	for round := range rounds {
		if deadline, ok := t.Deadline(); ok && time.Until(deadline) < killDeadlineMargin {
			t.Fatalf("stopped before round %d: the test's deadline is near (a soak run needs a larger -timeout)", round)
		}
		if round > 0 {
			w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "parent"})
			require.NoError(t, err)
			appendTo(w, latest+compactKillAppends)
			require.NoError(t, w.Release(ctx))
		}
		oldFirst, err := ccLogFirstOf(st.fs, id)
		require.NoError(t, err)
		keep := 3 + rng.IntN(5)
		// The cut goes back to the full record of the first kept
		// revision's chain.
		log, err := os.ReadFile(filepath.Join(dir, layout.LogPath(id)))
		require.NoError(t, err)
		newFirst := chainStart(log, latest-uint64(keep)+1)
		if kinds := kindsOf(log); round == 0 {
			require.Positive(t, kinds[record.KindDelta], "the workload writes deltas: %v", kinds)
		}

		c := startProc(t, procModeCompact, append(procEnv(dir, id, seed), compactKeepEnv+"="+strconv.Itoa(keep))...)
		proctest.Fields(t, c.Next(t), "ready")
		finished := false
		switch {
		case round == 0 || duration == 0:
			// Let it finish, to measure how long a compaction takes.
			c.Stop(t)
			finished = true
		case rng.IntN(8) == 0:
			c.Kill(t)
		default:
			time.Sleep(time.Duration(rng.Int64N(int64(duration) * 3 / 2)))
			c.Kill(t)
		}
		if l, ok := c.TryNext(); ok {
			done := proctest.Fields(t, l, "done")
			duration = time.Duration(proctest.Uint(t, done, "ns"))
			require.Equal(t, strconv.FormatUint(newFirst, 10), done["first"], "the child's compaction")
			finished = true
		}
		s.rounds++

		// Readers, before any recovery.
		first := s.check(t, st, id, latest, oldFirst, newFirst, finished, rng)

		// A new compaction reclaims what the killed one left.
		left, err := ccLeftovers(st.fs, id, first)
		require.NoError(t, err)
		temps := compactKillTemps(t, st, id)
		if len(left) > 0 {
			s.leftovers++
		}
		if len(temps) > 0 {
			s.temps++
		}
		log, err = os.ReadFile(filepath.Join(dir, layout.LogPath(id)))
		require.NoError(t, err)
		rep, err := st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: 2}, 0)
		require.NoError(t, err)
		require.NotContains(t, rep.Skipped, "held", "the killed child's lease is free")
		require.Equal(t, chainStart(log, latest-1), rep.FirstKept)
		slices.Sort(rep.Reclaimed)
		require.Equal(t, left, rep.Reclaimed, "round %d: the compaction after the kill reclaims every leftover", round)
		require.NoError(t, ccArchiveClean(st.fs, id))
		require.Empty(t, compactKillTemps(t, st, id), "temporary logs are swept")
	}
	_, _, err = ccRevisionsOf(ctx, st, id, latest, false, ccStateOnly)
	require.NoError(t, err)
	t.Logf("%s; %d revisions; %v", s, latest, time.Since(start).Round(time.Millisecond))
	if rounds >= compactKillRounds {
		require.Positive(t, s.killedOld, "no kill left the old state")
		require.Positive(t, s.leftovers+s.temps, "no kill landed in the middle of a compaction")
	}
}

const (
	// compactKillRounds is the number of children TestCompactKilled
	// kills; compactKillRoundsEnv overrides it (a soak).
	compactKillRounds    = 30
	compactKillRoundsEnv = "JSONLSTORE_COMPACT_KILL_ROUNDS"
	// compactKillStart is the session's length before the first round;
	// compactKillAppends what the parent appends before each later one.
	compactKillStart   = 60
	compactKillAppends = 8
	// compactKeepEnv passes KeepLast to a "compact" child.
	compactKeepEnv = "JSONLSTORE_COMPACT_KEEP"
)

// compactKillStats counts what the rounds of TestCompactKilled met.
type compactKillStats struct {
	rounds, finished, killedOld, killedNew int
	leftovers, temps                       int // rounds that left archive leftovers, temporary logs
}

func (s compactKillStats) String() string {
	return fmt.Sprintf("%d rounds: %d children finished, %d killed leaving the old state, %d killed after the new log's rename; "+
		"%d left archive leftovers, %d a temporary log", s.rounds, s.finished, s.killedOld, s.killedNew, s.leftovers, s.temps)
}

// check reads session id as readers do, before any recovery, and returns
// the log's first revision: the old state's or (oldFirst) the new one's
// (newFirst), with revisions 1..latest all there.
func (s *compactKillStats) check(t *testing.T, st *Store, id session.SessionID, latest, oldFirst, newFirst uint64, finished bool, rng *rand.Rand) uint64 {
	t.Helper()
	ctx := t.Context()
	_, _, err := ccRevisionsOf(ctx, st, id, latest, false, ccStateOnly)
	require.NoError(t, err, "after the kill")
	for _, rev := range []uint64{1, oldFirst - 1, oldFirst, newFirst - 1, 1 + rng.Uint64N(latest), latest} {
		if rev == 0 {
			continue
		}
		rec, err := st.LoadRevision(ctx, id, rev)
		require.NoError(t, err, "revision %d", rev)
		got, err := adapter.EncodeSnapshot(id, rec.Snapshot, 0)
		require.NoError(t, err)
		require.Equal(t, plPayload(id, rev, 0), got, "revision %d", rev)
	}
	first, err := ccLogFirstOf(st.fs, id)
	require.NoError(t, err)
	require.Contains(t, []uint64{oldFirst, newFirst}, first, "the log starts where the old or the new state does")
	switch {
	case finished:
		require.Equal(t, newFirst, first, "a compaction that finished replaced the log")
		s.finished++
	case first == oldFirst:
		s.killedOld++
	default:
		s.killedNew++
	}
	return first
}

// compactKillTemps lists the temporary logs a compaction left.
func compactKillTemps(t *testing.T, st *Store, id session.SessionID) []string {
	t.Helper()
	entries, err := st.fs.ReadDir(layout.SessionDir(id))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+LogFile+".compact-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// compactKillChild is the child side of TestCompactKilled: one standalone
// compaction, announced ("ready") and reported ("done ns=N first=F"),
// then a wait for stdin to close.
func compactKillChild(ctx context.Context, dir string, id session.SessionID) error {
	keep, err := strconv.Atoi(os.Getenv(compactKeepEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", compactKeepEnv, err)
	}
	st, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Println("ready")
	start := time.Now()
	rep, err := st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: keep}, proctest.ChildWait)
	if err != nil {
		return err
	}
	if rep.Skipped != "" {
		return fmt.Errorf("compaction skipped: %s", rep.Skipped)
	}
	fmt.Printf("done ns=%d first=%d\n", time.Since(start).Nanoseconds(), rep.FirstKept)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}
