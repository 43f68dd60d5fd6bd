package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

func checkRevisionsStepByOne(f *fixture) {
	t := f.t
	w := f.create("revs")
	require.Equal(t, uint64(1), f.load("revs").Revision)
	for want := uint64(2); want <= 6; want++ {
		rev, err := w.Append(f.ctx, want-1, stepSnap(t, "revs", int(want)))
		require.NoError(t, err)
		require.Equal(t, want, rev)
		require.Equal(t, want, w.Revision())
		require.Equal(t, want, f.load("revs").Revision)
	}
}

func checkStaleExpected(f *fixture) {
	t := f.t
	w := f.create("stale")
	f.appendSteps(w, 2) // latest 3
	before := f.load("stale")
	for _, expected := range []uint64{0, 1, 2, 4, 100} {
		_, err := w.Append(f.ctx, expected, stepSnap(t, "stale", 99))
		require.ErrorIs(t, err, sessionstore.ErrConflict, "expected %d with latest 3", expected)
	}
	after := f.load("stale")
	require.Equal(t, uint64(3), after.Revision, "a conflicting Append wrote something")
	requireSameSnap(t, before.Snapshot, after.Snapshot)
	require.Equal(t, uint64(3), w.Revision())
	// The writer stays usable.
	f.append(w, 3, stepSnap(t, "stale", 4))
}

// checkOneWinnerPerRevision races many goroutines, all with the same
// expected revision, once per round: exactly one wins each revision and
// every other gets ErrConflict.
func checkOneWinnerPerRevision(f *fixture) {
	t := f.t
	const goroutines, rounds = 8, 8
	w := f.create("race")
	for round := range rounds {
		expected := uint64(round + 1)
		start := make(chan struct{})
		type result struct {
			rev uint64
			err error
		}
		results := make([]result, goroutines)
		var wg sync.WaitGroup
		for g := range goroutines {
			snap := stepSnap(t, "race", 100*round+g)
			wg.Go(func() {
				<-start
				rev, err := w.Append(f.ctx, expected, snap)
				results[g] = result{rev, err}
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for g, r := range results {
			if r.err == nil {
				winners++
				require.Equal(t, expected+1, r.rev, "round %d goroutine %d", round, g)
				continue
			}
			require.ErrorIs(t, r.err, sessionstore.ErrConflict, "round %d goroutine %d", round, g)
		}
		require.Equal(t, 1, winners, "round %d: appends at expected revision %d", round, expected)
	}
	require.Equal(t, uint64(rounds+1), f.load("race").Revision)
	require.Len(t, f.history("race"), rounds+1)
}

// checkNoLostUpdate has goroutines append through one writer, each with its
// own (possibly stale) view of the latest revision, retrying on
// ErrConflict: every successful append is in the history exactly once,
// at the revision Append returned.
func checkNoLostUpdate(f *fixture) {
	t := f.t
	const goroutines, each = 6, 5
	w := f.create("nolost")
	type success struct {
		rev   uint64
		title string
	}
	var mu sync.Mutex
	var wins []success
	var failures []error
	var wg sync.WaitGroup
	base := stepSnap(t, "nolost", 0)
	for g := range goroutines {
		wg.Go(func() {
			view := uint64(1)
			for i := 0; i < each; {
				snap := base
				snap.Title = fmt.Sprintf("g%d-i%d", g, i)
				rev, err := w.Append(f.ctx, view, snap)
				switch {
				case err == nil:
					mu.Lock()
					wins = append(wins, success{rev, snap.Title})
					mu.Unlock()
					view = rev
					i++
				case errors.Is(err, sessionstore.ErrConflict):
					rec, err := f.s.Load(f.ctx, "nolost")
					if err != nil {
						mu.Lock()
						failures = append(failures, err)
						mu.Unlock()
						return
					}
					view = rec.Revision
				default:
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, failures)
	require.Len(t, wins, goroutines*each)

	hist := f.history("nolost")
	require.Len(t, hist, 1+goroutines*each, "every acknowledged append is a revision, and nothing else is")
	seen := map[string]bool{}
	for _, rec := range hist[1:] {
		require.False(t, seen[rec.Snapshot.Title], "revision %d repeats %q", rec.Revision, rec.Snapshot.Title)
		seen[rec.Snapshot.Title] = true
	}
	for _, s := range wins {
		require.Equal(t, s.title, hist[s.rev-1].Snapshot.Title, "revision %d is not what its Append wrote", s.rev)
	}
}

func checkRecordTimes(f *fixture) {
	t := f.t
	w := f.create("times")
	f.appendSteps(w, 20)
	w2 := f.create("times2")
	f.appendSteps(w2, 1)
	var prev time.Time
	for _, rec := range f.history("times") {
		require.False(t, rec.Time.IsZero(), "revision %d", rec.Revision)
		require.Equal(t, time.UTC, rec.Time.Location(), "revision %d", rec.Revision)
		require.False(t, rec.Time.Before(prev), "revision %d at %s is earlier than the previous at %s", rec.Revision, rec.Time, prev)
		prev = rec.Time
	}
	// LoadRevision reports the same times as History.
	rec, err := f.s.LoadRevision(f.ctx, "times", 21)
	require.NoError(t, err)
	require.True(t, rec.Time.Equal(prev))
}

// checkRecordsRestore drives a session through a deterministic random walk
// of legal and illegal transitions, appending after each accepted one:
// every record restores to a session that encodes exactly as the one
// appended.
func checkRecordsRestore(f *fixture) {
	t := f.t
	s := sessiontest.New("walk")
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "start", sessiontest.Epoch)))
	w := f.createSnap(sessiontest.Snap(t, s))
	want := []string{mustEncode(t, s)}
	r := rand.New(rand.NewPCG(7, 11))
	at := sessiontest.Epoch
	for i := 0; len(want) < 40 && i < 10_000; i++ {
		at = at.Add(time.Second)
		// Step a copy, so that a step into a terminal state can be
		// discarded until the end of the walk.
		next, err := sessiontest.Snap(t, s).Restore()
		require.NoError(t, err)
		if _, err := sessiontest.Step(next, r, at); err != nil {
			continue
		}
		if next.State().Terminal() && len(want) < 39 {
			continue
		}
		s = next
		f.append(w, w.Revision(), sessiontest.Snap(t, s))
		want = append(want, mustEncode(t, s))
	}
	require.Len(t, want, 40)
	hist := f.history("walk")
	require.Len(t, hist, len(want))
	for i, rec := range hist {
		restored, err := rec.Session()
		require.NoError(t, err, "revision %d", rec.Revision)
		require.Equal(t, want[i], mustEncode(t, restored), "revision %d does not restore to what was appended", rec.Revision)
	}
}

func mustEncode(t require.TestingT, s *session.Session) string {
	b, err := sessnap.Encode(s)
	require.NoError(t, err)
	return string(b)
}

func checkEachStateRoundTrips(f *fixture) {
	t := f.t
	for _, st := range session.States {
		id := "state-" + string(st)
		w := f.create(id)
		want := sessiontest.InState(id, st)
		f.append(w, 1, sessiontest.Snap(t, want))
		rec := f.load(session.SessionID(id))
		require.Equal(t, st, rec.Snapshot.State)
		got, err := rec.Session()
		require.NoError(t, err, "state %s", st)
		require.Equal(t, st, got.State())
		require.Equal(t, mustEncode(t, want), mustEncode(t, got), "state %s", st)
	}
}

func checkAppendCopies(f *fixture) {
	t := f.t
	w := f.createSnap(richSnap(t, "copyin"))
	snap := richSnap(t, "copyin")
	want := encode(t, snap)
	f.append(w, 1, snap)
	mutate(&snap) // the caller reuses its snapshot after Append
	require.Equal(t, want, encode(t, f.load("copyin").Snapshot), "the store kept a reference to the appended snapshot")

	created := richSnap(t, "copyin2")
	want = encode(t, created)
	f.createSnap(created)
	mutate(&created)
	require.Equal(t, want, encode(t, f.load("copyin2").Snapshot), "the store kept a reference to the created snapshot")
}

func checkAppendAfterRelease(f *fixture) {
	t := f.t
	w := f.create("released")
	f.appendSteps(w, 1)
	require.NoError(t, w.Release(f.ctx))
	require.NoError(t, w.Release(f.ctx), "Release is idempotent")

	_, err := w.Append(f.ctx, 2, stepSnap(t, "released", 3))
	require.ErrorIs(t, err, sessionstore.ErrClosed)
	require.ErrorIs(t, w.Heartbeat(f.ctx), sessionstore.ErrClosed)
	require.ErrorIs(t, w.Delete(f.ctx), sessionstore.ErrClosed)
	require.Equal(t, uint64(2), f.load("released").Revision, "a released writer wrote or deleted something")
}
