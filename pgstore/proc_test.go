package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/sessiontest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Process tests run writers in real processes, as on several machines:
// the test binary re-executes itself with procModeEnv set, and TestMain
// runs procHelperMain instead of the tests. A helper reports on stdout,
// one line per event; the parent reads them with deadlines (never a
// sleep) and drives the "append" helper through its stdin.
const (
	procModeEnv  = "PGSTORE_PROC_MODE"
	procDSNEnv   = "PGSTORE_PROC_DSN"
	procIDEnv    = "PGSTORE_PROC_ID"
	procLabelEnv = "PGSTORE_PROC_LABEL"
	procTTLEnv   = "PGSTORE_PROC_TTL_MS"

	// procModeHolder: procHolderRounds times, acquire the session
	// (printing "acquired gen=G rev=R"), append 1 to 3 revisions (printing
	// "ack REV gen=G" after each) and release (printing "released
	// gen=G"). Then print "done" and exit 0.
	procModeHolder = "holder"
	// procModeAppend: acquire the session, print "ready gen=G rev=R
	// prev=STATE", then for each line "append" on stdin append the next
	// revision and print "ack REV", or "lost" on ErrLeaseLost. When stdin
	// closes, release, print "done" and exit 0.
	procModeAppend = "append"

	// procLineWithin bounds every wait for a helper: generous, because the
	// helpers are race-enabled and the machine is loaded.
	procLineWithin = 30 * time.Second

	procHolderRounds = 4
)

// procSnap is revision content written by a helper: the session titled
// with the writer's label and a count.
func procSnap(id session.SessionID, label string, n int) (sessnap.Snapshot, error) {
	snap, err := sessnap.Of(sessiontest.InState(string(id), session.StateIdle))
	snap.Title, snap.TitleProvenance = fmt.Sprintf("%s %d", label, n), session.TitleGenerated
	return snap, err
}

func procHelperMain(mode string) int {
	if err := procHelper(mode); err != nil {
		fmt.Printf("fail %v\n", err)
		return 1
	}
	return 0
}

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
			actx, cancel := context.WithTimeout(ctx, procLineWithin)
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
				fmt.Printf("ack %d gen=%d\n", rev, w.Generation())
			}
			if err := w.Release(ctx); err != nil {
				return err
			}
			fmt.Printf("released gen=%d\n", w.Generation())
		}
		fmt.Println("done")
		return nil
	case procModeAppend:
		actx, cancel := context.WithTimeout(ctx, procLineWithin)
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

// proc is a running helper.
type proc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startProc(t *testing.T, mode, dsn string, id session.SessionID, label string, ttl time.Duration) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		procModeEnv+"="+mode, procDSNEnv+"="+dsn, procIDEnv+"="+string(id),
		procLabelEnv+"="+label, procTTLEnv+"="+strconv.FormatInt(ttl.Milliseconds(), 10))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{t: t, name: label, cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// next returns the helper's next line, failing on a deadline, an exit or
// a "fail" line.
func (p *proc) next() string {
	p.t.Helper()
	timer := time.NewTimer(procLineWithin)
	defer timer.Stop()
	select {
	case l, ok := <-p.lines:
		require.True(p.t, ok, "%s exited", p.name)
		require.False(p.t, strings.HasPrefix(l, "fail"), "%s: %s", p.name, l)
		return l
	case <-timer.C:
		p.t.Fatalf("%s said nothing for %s", p.name, procLineWithin)
		return ""
	}
}

// kill kills the helper with SIGKILL and waits for it to die of it.
func (p *proc) kill() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Kill())
	err := p.cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(p.t, err, &ee, "%s", p.name)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(p.t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%s did not die of SIGKILL: %v", p.name, err)
}

// field returns the value of key=value in line.
func field(t *testing.T, line, key string) string {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in %q", key, line)
	return ""
}

func fieldUint(t *testing.T, line, key string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(field(t, line, key), 10, 64)
	require.NoError(t, err)
	return v
}

// finish closes the helper's stdin and waits for "done" and a clean exit.
func (p *proc) finish() []string {
	p.t.Helper()
	require.NoError(p.t, p.stdin.Close())
	var rest []string
	for {
		l := p.next()
		if l == "done" {
			break
		}
		rest = append(rest, l)
	}
	require.NoError(p.t, p.cmd.Wait())
	return rest
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
	var ps []*proc
	for i := range procs {
		ps = append(ps, startProc(t, procModeHolder, dsn, "contended", fmt.Sprintf("p%d", i), 10*time.Second))
	}
	gens := map[uint64]string{}
	ackGen := map[uint64]uint64{} // revision → generation of the writer that acknowledged it
	handle := func(p *proc, l string) {
		switch {
		case strings.HasPrefix(l, "acquired"):
			g := fieldUint(t, l, "gen")
			require.NotContains(t, gens, g, "generation %d issued twice (%s and %s)", g, gens[g], p.name)
			gens[g] = p.name
		case strings.HasPrefix(l, "ack"):
			rev, err := strconv.ParseUint(strings.Fields(l)[1], 10, 64)
			require.NoError(t, err)
			require.NotContains(t, ackGen, rev, "revision %d acknowledged twice", rev)
			ackGen[rev] = fieldUint(t, l, "gen")
		}
	}
	for _, p := range ps {
		var last uint64
		for l := p.next(); l != "done"; l = p.next() {
			handle(p, l)
			if strings.HasPrefix(l, "acquired") {
				g := fieldUint(t, l, "gen")
				require.Greater(t, g, last, "%s: generations increase", p.name)
				last = g
			}
		}
		require.NoError(t, p.cmd.Wait())
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
	ready := a.next()
	genA := fieldUint(t, ready, "gen")
	_, err = io.WriteString(a.stdin, "append\n")
	require.NoError(t, err)
	require.Equal(t, "ack 2", a.next())

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	b := startProc(t, procModeAppend, dsn, "paused", "b", ttl)
	ready = b.next() // once a's lease has expired
	genB := fieldUint(t, ready, "gen")
	require.Greater(t, genB, genA)
	require.Equal(t, "stale", field(t, ready, "prev"))
	_, err = io.WriteString(b.stdin, "append\n")
	require.NoError(t, err)
	require.Equal(t, "ack 3", b.next())

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	for range 2 {
		_, err = io.WriteString(a.stdin, "append\n")
		require.NoError(t, err)
		require.Equal(t, "lost", a.next())
	}
	require.Empty(t, a.finish())
	require.Empty(t, b.finish())

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
