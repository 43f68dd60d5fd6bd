package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Process tests run writers in real processes, as on several machines,
// through proctest: the test binary re-executes itself with procModeEnv
// set, and TestMain runs procHelper instead of the tests. A helper reports
// on stdout, one line per event; the parent reads them with deadlines
// (never a sleep) and drives the "append" helper through its stdin.
const (
	procModeEnv  = "PGSTORE_PROC_MODE"
	procDSNEnv   = "PGSTORE_PROC_DSN"
	procIDEnv    = "PGSTORE_PROC_ID"
	procLabelEnv = "PGSTORE_PROC_LABEL"
	procTTLEnv   = "PGSTORE_PROC_TTL_MS"

	// procModeHolder: procHolderRounds times, acquire the session
	// (printing "acquired gen=G rev=R"), append 1 to 3 revisions (printing
	// "appended rev=R gen=G" after each) and release (printing "released
	// gen=G"). Then print "done" and exit 0.
	procModeHolder = "holder"
	// procModeAppend: acquire the session, print "ready gen=G rev=R
	// prev=STATE", then for each line "append" on stdin append the next
	// revision and print "ack REV", or "lost" on ErrLeaseLost. When stdin
	// closes, release, print "done" and exit 0.
	procModeAppend = "append"

	procHolderRounds = 4
)

// procSnap is revision content written by a helper: the session titled
// with the writer's label and a count.
func procSnap(id session.SessionID, label string, n int) (sessnap.Snapshot, error) {
	return sessnap.Of(sessiontest.Titled(string(id), fmt.Sprintf("%s %d", label, n)))
}

// procHelper runs helper mode mode (TestMain's proctest.Helper calls it).
func procHelper(mode string) error {
	ctx := context.Background()
	ttl, _ := strconv.Atoi(os.Getenv(procTTLEnv))
	s, err := pgstore.Open(ctx, os.Getenv(procDSNEnv), pgstore.Options{LeaseTTL: time.Duration(ttl) * time.Millisecond})
	if err != nil {
		return err
	}
	defer s.Close()
	id, label := session.SessionID(os.Getenv(procIDEnv)), os.Getenv(procLabelEnv)
	opts := sessionstore.AcquireOptions{Label: label}
	stdin := bufio.NewScanner(os.Stdin)
	switch mode {
	case procModeHolder:
		for n := range procHolderRounds {
			actx, cancel := context.WithTimeout(ctx, proctest.ChildWait)
			w, err := s.Acquire(actx, id, opts)
			cancel()
			if err != nil {
				return err
			}
			fmt.Printf("acquired gen=%d rev=%d\n", w.Generation(), w.Revision())
			for range 1 + n%3 {
				snap, err := procSnap(id, label, n)
				if err != nil {
					return err
				}
				rev, err := w.Append(ctx, w.Revision(), snap)
				if err != nil {
					return err
				}
				fmt.Printf("appended rev=%d gen=%d\n", rev, w.Generation())
			}
			if err := w.Release(ctx); err != nil {
				return err
			}
			fmt.Printf("released gen=%d\n", w.Generation())
		}
		fmt.Println("done")
		return nil
	case procModeAppend:
		actx, cancel := context.WithTimeout(ctx, proctest.ChildWait)
		w, err := s.Acquire(actx, id, opts)
		cancel()
		if err != nil {
			return err
		}
		fmt.Printf("ready gen=%d rev=%d prev=%s\n", w.Generation(), w.Revision(), w.Recovery().Previous.State)
		for n := 0; stdin.Scan(); n++ {
			snap, err := procSnap(id, label, n)
			if err != nil {
				return err
			}
			rev, err := w.Append(ctx, w.Revision(), snap)
			switch {
			case errors.Is(err, sessionstore.ErrLeaseLost):
				fmt.Println("lost")
			case err != nil:
				return err
			default:
				fmt.Printf("ack %d\n", rev)
			}
		}
		if err := w.Release(ctx); err != nil {
			return err
		}
		fmt.Println("done")
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// startProc starts a helper in mode on session id of the database dsn,
// labelled label, with lease TTL ttl; it is killed and reaped at cleanup
// if the test has not done so.
func startProc(t *testing.T, mode, dsn string, id session.SessionID, label string, ttl time.Duration) *proctest.Child {
	t.Helper()
	return proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: mode, Env: []string{
		procDSNEnv + "=" + dsn, procIDEnv + "=" + string(id),
		procLabelEnv + "=" + label, procTTLEnv + "=" + strconv.FormatInt(ttl.Milliseconds(), 10),
	}})
}

// finish closes a helper's stdin, requires a clean exit, and returns the
// lines it printed before "done".
func finish(t *testing.T, p *proctest.Child) []string {
	t.Helper()
	p.Stop(t)
	var rest []string
	for {
		l, ok := p.TryNext()
		require.True(t, ok, "%s exited without saying done", p)
		if l == "done" {
			return rest
		}
		rest = append(rest, l)
	}
}

// Several processes contend for one session's lease, each acquiring,
// appending and releasing in turn: every acquisition gets a generation no
// other got, each process's generations increase, and the history holds
// exactly the acknowledged appends, each under its writer's generation,
// generations never decreasing along it (so no two holders interleaved).
func TestProcContention(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	first, err := procSnap("contended", "parent", 0)
	require.NoError(t, err)
	w, err := s.Create(ctx, first, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))

	const procs = 3
	var ps []*proctest.Child
	names := map[*proctest.Child]string{}
	for i := range procs {
		p := startProc(t, procModeHolder, dsn, "contended", fmt.Sprintf("p%d", i), 10*time.Second)
		ps = append(ps, p)
		names[p] = fmt.Sprintf("p%d", i)
	}
	gens := map[uint64]string{}
	ackGen := map[uint64]uint64{} // revision → generation of the writer that acknowledged it
	for _, p := range ps {
		name := names[p]
		var last uint64
		for l := p.Next(t); l != "done"; l = p.Next(t) {
			verb, _, _ := strings.Cut(l, " ")
			m := proctest.Fields(t, l, verb)
			switch verb {
			case "acquired":
				g := proctest.Uint(t, m, "gen")
				require.NotContains(t, gens, g, "generation %d issued twice (%s and %s)", g, gens[g], name)
				gens[g] = name
				require.Greater(t, g, last, "%s: generations increase", name)
				last = g
			case "appended":
				rev := proctest.Uint(t, m, "rev")
				require.NotContains(t, ackGen, rev, "revision %d acknowledged twice", rev)
				ackGen[rev] = proctest.Uint(t, m, "gen")
			}
		}
		require.NoError(t, p.Wait(t))
	}
	require.Len(t, gens, procs*procHolderRounds)

	hist := make(map[uint64]sessionstore.Record)
	var prevGen uint64
	var n uint64
	for rec, err := range s.History(ctx, "contended") {
		require.NoError(t, err)
		n++
		require.Equal(t, n, rec.Revision)
		require.GreaterOrEqual(t, rec.Generation, prevGen, "revision %d", rec.Revision)
		prevGen = rec.Generation
		hist[rec.Revision] = rec
	}
	require.Equal(t, uint64(1+len(ackGen)), n, "the history is revision 1 and the acknowledged appends")
	for rev, g := range ackGen {
		require.Equal(t, g, hist[rev].Generation, "revision %d", rev)
		require.Contains(t, hist[rev].Snapshot.Title, gens[g], "revision %d was written by its acknowledger", rev)
	}
	st, err := s.Lease(ctx, "contended")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseFree, st.State)
}

// A holder stopped (SIGSTOP) for longer than its lease's TTL loses it:
// another process takes it over (seeing it stale) and appends; resumed,
// the stopped holder's next append fails with lease-lost and writes
// nothing.
func TestProcStoppedHolderWritesNothing(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	first, err := procSnap("paused", "parent", 0)
	require.NoError(t, err)
	w, err := s.Create(ctx, first, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))

	// Heartbeats every second: a race-enabled helper on a loaded machine
	// keeps its lease until it is stopped.
	const ttl = 3 * time.Second
	a := startProc(t, procModeAppend, dsn, "paused", "a", ttl)
	genA := proctest.Uint(t, proctest.Fields(t, a.Next(t), "ready"), "gen")
	a.Send(t, "append")
	require.Equal(t, "ack 2", a.Next(t))

	a.Signal(t, syscall.SIGSTOP)
	b := startProc(t, procModeAppend, dsn, "paused", "b", ttl)
	ready := proctest.Fields(t, b.Next(t), "ready") // once a's lease has expired
	genB := proctest.Uint(t, ready, "gen")
	require.Greater(t, genB, genA)
	require.Equal(t, "stale", ready["prev"])
	b.Send(t, "append")
	require.Equal(t, "ack 3", b.Next(t))

	a.Signal(t, syscall.SIGCONT)
	for range 2 {
		a.Send(t, "append")
		require.Equal(t, "lost", a.Next(t))
	}
	require.Empty(t, finish(t, a))
	require.Empty(t, finish(t, b))

	var recs []sessionstore.Record
	for rec, err := range s.History(ctx, "paused") {
		require.NoError(t, err)
		recs = append(recs, rec)
	}
	require.Len(t, recs, 3, "the resumed holder wrote nothing")
	require.Equal(t, "a 0", recs[1].Snapshot.Title)
	require.Equal(t, genA, recs[1].Generation)
	require.Equal(t, "b 0", recs[2].Snapshot.Title)
	require.Equal(t, genB, recs[2].Generation)
}
