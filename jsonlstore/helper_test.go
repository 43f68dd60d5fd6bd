package jsonlstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Process tests (kill_test.go, readrace_test.go, copy_test.go) run the
// store in real processes. The test binary re-executes itself with
// procModeEnv set to a helper mode; TestMain then runs procHelperMain
// instead of the tests. A helper reports on stdout, one line per event
// (one write(2) per line), and the parent reads those lines with
// deadlines: that, never a sleep, is how parent and child synchronise.
//
// Every revision the helpers write is a pure function of (session ID,
// seed, revision) — procSession — so any reader in any process can check
// any record it is handed, byte for byte, against what must have been
// written.
const (
	procModeEnv = "JSONLSTORE_PROC_MODE"
	procDirEnv  = "JSONLSTORE_PROC_DIR"
	procIDEnv   = "JSONLSTORE_PROC_ID"
	procSeedEnv = "JSONLSTORE_PROC_SEED"
	// procSeedOverrideEnv fixes the seed of a process test, to replay a
	// failing run (each test logs its seed).
	procSeedOverrideEnv = "JSONLSTORE_SEED"

	// procModeAppend: open the store, acquire session ID (creating it with
	// revision 1 if it does not exist), print
	// "ready gen=G rev=R tail=T prev=P", then append the next revision
	// forever, printing "ack REV" after each Append that returned nil.
	// When stdin closes it releases, prints "done rev=R" and exits 0.
	procModeAppend = "append"
	// procModeHolder: until stdin closes, repeatedly acquire session ID
	// (printing "acquired gen=G rev=R tail=T prev=P"), append 1 to 4
	// revisions (printing "ack REV" after each) and release (printing
	// "released gen=G rev=R"). Then print "done" and exit 0.
	procModeHolder = "holder"
	// procModeReader: print "reading", then read session ID with Load,
	// History, LoadRevision and List (procReadOnce) until stdin closes,
	// checking every record against procSession; print "reads N" and exit
	// 0. On the first failure print "fail MESSAGE" and exit 1.
	procModeReader = "reader"
	// procModeHold: acquire session ID (which must exist), print
	// "held gen=G", then hold the lease, writing nothing, until stdin
	// closes (then release and exit 0) or the process is killed.
	procModeHold = "hold"

	// procLineWithin bounds every wait for a helper: generous, because the
	// helpers are race-enabled and the machine (2 cores) is loaded.
	procLineWithin = 30 * time.Second
)

// --- the deterministic generator ---------------------------------------------

const (
	// One revision in procLargeEvery carries a large message (procLargeMin
	// to procLargeMax bytes), so that its one write(2) spans many pages and
	// a SIGKILL can land in the middle of it; the others are small.
	procLargeEvery = 4
	procLargeMin   = 64 << 10
	procLargeMax   = 300 << 10
	procSmallMin   = 200
	procSmallMax   = 4 << 10
	// Letters, digits, space and dot: nothing JSON escapes, so the encoded
	// size is the text size and every byte is a different function of the
	// seed.
	procAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ."
)

// procSession returns revision rev of session id as the process tests
// write it: a fresh idle session whose conversation holds one user message
// whose text (and size) is derived from (id, seed, rev).
func procSession(id session.SessionID, seed, rev uint64) *session.Session {
	r := procRand(id, seed, rev)
	n := procTextSize(r)
	// A random block, repeated at shifting offsets: every byte depends on
	// (id, seed, rev), yet a large text costs one copy per block and not
	// one random draw per byte (which is slow under -race).
	block := make([]byte, 4<<10)
	for i := 0; i < len(block); i += 8 {
		x := r.Uint64()
		for j := range 8 {
			block[i+j] = procAlphabet[(x>>(6*j))&63]
		}
	}
	text := fmt.Appendf(make([]byte, 0, n+len(block)), "%s seed %d rev %d: ", id, seed, rev)
	for i := 0; len(text) < n; i++ {
		off := (i*613 + int(rev%4096)) % len(block)
		text = append(text, block[off:]...)
		text = append(text, block[:off]...)
	}
	s := sessiontest.New(string(id))
	at := sessiontest.Epoch.Add(time.Duration(rev) * time.Second)
	if err := s.AppendMessage(session.TextMessage(session.RoleUser, string(text[:n]), at)); err != nil {
		panic(err)
	}
	return s
}

func procRand(id session.SessionID, seed, rev uint64) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return rand.New(rand.NewPCG(seed, rev*0x9e3779b97f4a7c15^h.Sum64()))
}

// procTextSize draws the size of a revision's text: the first draws of
// its generator.
func procTextSize(r *rand.Rand) int {
	n := procSmallMin + r.IntN(procSmallMax-procSmallMin)
	if r.IntN(procLargeEvery) == 0 {
		// Skewed towards the small end (mean about 120 KiB): large
		// revisions make the log long, and reading it is what costs.
		n = procLargeMin + r.IntN(1+r.IntN(procLargeMax-procLargeMin))
	}
	return n
}

// procLarge reports whether revision rev of session id is a large one.
func procLarge(id session.SessionID, seed, rev uint64) bool {
	return procTextSize(procRand(id, seed, rev)) >= procLargeMin
}

// procSnapshot is the snapshot helpers append as revision rev.
func procSnapshot(id session.SessionID, seed, rev uint64) (sessnap.Snapshot, error) {
	return sessnap.Of(procSession(id, seed, rev))
}

type procWantKey struct {
	id        session.SessionID
	seed, rev uint64
}

// procWantCache maps a procWantKey to the SHA-256 of the sessnap.Encode
// bytes of that revision: generating a large revision costs milliseconds
// under -race, and readers check the same revisions again and again.
var procWantCache sync.Map

func procWant(id session.SessionID, seed, rev uint64) ([32]byte, error) {
	k := procWantKey{id, seed, rev}
	if v, ok := procWantCache.Load(k); ok {
		return v.([32]byte), nil
	}
	b, err := sessnap.Encode(procSession(id, seed, rev))
	if err != nil {
		return [32]byte{}, err
	}
	sum := sha256.Sum256(b)
	procWantCache.Store(k, sum)
	return sum, nil
}

// procCheckRecord checks that rec is a whole, untorn revision of session
// id: its snapshot encodes to exactly the bytes the generator gives for
// its revision.
func procCheckRecord(id session.SessionID, seed uint64, rec sessionstore.Record) error {
	if rec.ID != id || rec.Revision == 0 {
		return fmt.Errorf("record of session %q revision %d, want session %q", rec.ID, rec.Revision, id)
	}
	got, err := sessnap.Marshal(rec.Snapshot)
	if err != nil {
		return fmt.Errorf("revision %d: re-encode snapshot: %w", rec.Revision, err)
	}
	want, err := procWant(id, seed, rec.Revision)
	if err != nil {
		return fmt.Errorf("revision %d: generate: %w", rec.Revision, err)
	}
	if sha256.Sum256(got) != want {
		return fmt.Errorf("revision %d (generation %d): snapshot (%d bytes) is not what the generator wrote for it",
			rec.Revision, rec.Generation, len(got))
	}
	return nil
}

// procHistoryResult is what procCheckHistory saw.
type procHistoryResult struct {
	Latest     uint64 // last revision yielded
	Generation uint64 // its generation
	Checked    int    // records compared with the generator
}

// procCheckHistory reads the whole history of session id and checks the
// sequence rules (revisions 1, 2, 3, … with no gap, generations and times
// never decreasing), that no error is yielded, and that every record above
// revision from is exactly what the generator wrote.
func procCheckHistory(ctx context.Context, st *Store, id session.SessionID, seed, from uint64) (procHistoryResult, error) {
	var res procHistoryResult
	var prev sessionstore.Record
	for rec, err := range st.History(ctx, id) {
		if err != nil {
			return res, fmt.Errorf("history after revision %d: %w", res.Latest, err)
		}
		switch {
		case rec.Revision != res.Latest+1:
			return res, fmt.Errorf("history: revision %d follows revision %d", rec.Revision, res.Latest)
		case rec.Generation < prev.Generation:
			return res, fmt.Errorf("history: revision %d has generation %d after %d", rec.Revision, rec.Generation, prev.Generation)
		case rec.Time.Before(prev.Time):
			return res, fmt.Errorf("history: revision %d has time %s before %s", rec.Revision, rec.Time, prev.Time)
		}
		if rec.Revision > from {
			if err := procCheckRecord(id, seed, rec); err != nil {
				return res, fmt.Errorf("history: %w", err)
			}
			res.Checked++
		}
		res.Latest, res.Generation = rec.Revision, rec.Generation
		prev = rec
	}
	if res.Latest == 0 {
		return res, errors.New("history: no records")
	}
	return res, nil
}

// procReadOnce runs read operation op (Load, History, LoadRevision or
// List, in turn) on session id and checks what it returns.
func procReadOnce(ctx context.Context, st *Store, id session.SessionID, seed uint64, r *rand.Rand, op int) error {
	switch op % 4 {
	case 0:
		rec, err := st.Load(ctx, id)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if err := procCheckRecord(id, seed, rec); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	case 1:
		if _, err := procCheckHistory(ctx, st, id, seed, 0); err != nil {
			return err
		}
	case 2:
		latest, err := st.Load(ctx, id)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		rev := 1 + r.Uint64N(latest.Revision)
		rec, err := st.LoadRevision(ctx, id, rev)
		if err != nil {
			return fmt.Errorf("load revision %d of %d: %w", rev, latest.Revision, err)
		}
		if rec.Revision != rev {
			return fmt.Errorf("load revision %d: got revision %d", rev, rec.Revision)
		}
		if err := procCheckRecord(id, seed, rec); err != nil {
			return fmt.Errorf("load revision: %w", err)
		}
	case 3:
		page, err := st.List(ctx, summary.Query{})
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		var found *summary.Summary
		for i := range page.Items {
			if page.Items[i].ID == id {
				found = &page.Items[i]
			}
		}
		if found == nil {
			return fmt.Errorf("list: session %s missing from a page of %d", id, len(page.Items))
		}
		if found.Revision == 0 {
			return fmt.Errorf("list: session %s at revision 0", id)
		}
		rec, err := st.Load(ctx, id)
		if err != nil {
			return fmt.Errorf("load after list: %w", err)
		}
		if rec.Revision < found.Revision {
			return fmt.Errorf("list: revision %d, a later load: %d", found.Revision, rec.Revision)
		}
	}
	return nil
}

// --- the helper side ---------------------------------------------------------

func procHelperMain(mode string) int {
	if err := procHelper(mode); err != nil {
		fmt.Fprintf(os.Stderr, "jsonlstore helper %s (pid %d): %v\n", mode, os.Getpid(), err)
		return 1
	}
	return 0
}

func procHelper(mode string) error {
	ctx := context.Background()
	id := session.SessionID(os.Getenv(procIDEnv))
	seed, err := strconv.ParseUint(os.Getenv(procSeedEnv), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", procSeedEnv, err)
	}
	st, err := Open(os.Getenv(procDirEnv), Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
		close(stop)
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	switch mode {
	case procModeAppend:
		w, err := procAcquireOrCreate(ctx, st, id, seed)
		if err != nil {
			return err
		}
		procPrintAcquired("ready", w)
		for !stopped() {
			if err := procAppendNext(ctx, w, seed); err != nil {
				return err
			}
		}
		rev := w.Revision()
		if err := w.Release(ctx); err != nil {
			return err
		}
		fmt.Printf("done rev=%d\n", rev)
		return nil
	case procModeHolder:
		r := rand.New(rand.NewPCG(seed, uint64(os.Getpid())))
		for !stopped() {
			w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "holder"})
			if err != nil {
				return err
			}
			procPrintAcquired("acquired", w)
			for range 1 + r.IntN(4) {
				if err := procAppendNext(ctx, w, seed); err != nil {
					return err
				}
			}
			if err := w.Release(ctx); err != nil {
				return err
			}
			fmt.Printf("released gen=%d rev=%d\n", w.Generation(), w.Revision())
		}
		fmt.Println("done")
		return nil
	case procModeHold:
		w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "holder"})
		if err != nil {
			return err
		}
		fmt.Printf("held gen=%d\n", w.Generation())
		<-stop
		return w.Release(ctx)
	case procModeReader:
		procNice()
		r := rand.New(rand.NewPCG(seed, uint64(os.Getpid())))
		fmt.Println("reading")
		n := 0
		for ; !stopped(); n++ {
			if err := procReadOnce(ctx, st, id, seed, r, n); err != nil {
				fmt.Printf("fail %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
				return err
			}
		}
		fmt.Printf("reads %d\n", n)
		return nil
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// procNice lowers the scheduling priority of every thread of this process
// (threads started later inherit it), best effort: a reader process then
// reads whenever a CPU is free, without delaying the test process when it
// aims a kill at a write, which needs a CPU at once.
func procNice() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, task := range tasks {
		if tid, err := strconv.Atoi(task.Name()); err == nil {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19)
		}
	}
}

// procAcquireOrCreate acquires session id, creating it (revision 1 from
// the generator) when it does not exist yet.
func procAcquireOrCreate(ctx context.Context, st *Store, id session.SessionID, seed uint64) (sessionstore.Writer, error) {
	opts := sessionstore.AcquireOptions{Label: "helper"}
	if err := st.exists(id); errors.Is(err, sessionstore.ErrNotFound) {
		snap, err := procSnapshot(id, seed, 1)
		if err != nil {
			return nil, err
		}
		w, err := st.Create(ctx, snap, opts)
		if !errors.Is(err, sessionstore.ErrExists) {
			return w, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, procLineWithin)
	defer cancel()
	return st.Acquire(ctx, id, opts)
}

// procAppendNext appends the generator's next revision and acknowledges it
// on stdout, once Append has returned nil (the revision is durable).
func procAppendNext(ctx context.Context, w sessionstore.Writer, seed uint64) error {
	rev := w.Revision()
	snap, err := procSnapshot(w.ID(), seed, rev+1)
	if err != nil {
		return err
	}
	got, err := w.Append(ctx, rev, snap)
	if err != nil {
		return fmt.Errorf("append revision %d: %w", rev+1, err)
	}
	fmt.Printf("ack %d\n", got)
	return nil
}

func procPrintAcquired(what string, w sessionstore.Writer) {
	rep := w.Recovery()
	prev := string(rep.Previous.State)
	if prev == "" {
		prev = "none"
	}
	fmt.Printf("%s gen=%d rev=%d tail=%d prev=%s\n", what, w.Generation(), w.Revision(), rep.TailBytes, prev)
}

// --- the parent side ---------------------------------------------------------

// procSeed returns the seed of a process test (procSeedOverrideEnv, or the
// clock) and logs it.
func procSeed(t testing.TB) uint64 {
	t.Helper()
	// The default seed is fixed per test, so that `make test` makes the
	// same choices on every run and never passes or fails by the luck of
	// a seed; `make seeds` runs each process test over many seeds.
	h := fnv.New64a()
	_, _ = h.Write([]byte(t.Name()))
	seed := h.Sum64()
	if s := os.Getenv(procSeedOverrideEnv); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, procSeedOverrideEnv)
	}
	t.Logf("seed %d (%s=%d replays the choices of this run)", seed, procSeedOverrideEnv, seed)
	return seed
}

// procEnvInt returns the integer in environment variable name, or def.
func procEnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}

// procFields parses the key=value fields of a helper line after its verb.
func procFields(t testing.TB, line, verb string) map[string]string {
	t.Helper()
	f := strings.Fields(line)
	require.NotEmpty(t, f, "empty helper line")
	require.Equal(t, verb, f[0], "helper line %q", line)
	m := map[string]string{}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, "helper line %q", line)
		m[k] = v
	}
	return m
}

func procUint(t testing.TB, m map[string]string, key string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(m[key], 10, 64)
	require.NoError(t, err, "field %s in %v", key, m)
	return n
}

// procAcquired is a parsed "ready"/"acquired" line.
type procAcquired struct {
	Gen, Rev, Tail uint64
	Prev           summary.LeaseState
}

func procParseAcquired(t testing.TB, line, verb string) procAcquired {
	t.Helper()
	m := procFields(t, line, verb)
	a := procAcquired{Gen: procUint(t, m, "gen"), Rev: procUint(t, m, "rev"), Tail: procUint(t, m, "tail"), Prev: summary.LeaseState(m["prev"])}
	if a.Prev == "none" {
		a.Prev = summary.LeaseUnknown
	}
	return a
}

// procChild is a running helper process. Its stdout is read by one
// goroutine: "ack REV" lines are counted (the highest revision kept), all
// other lines are queued for next.
type procChild struct {
	mode   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	pid    int
	stderr *procStderr

	mu      sync.Mutex
	lines   []string
	read    int
	acks    int
	lastAck uint64
	eof     bool
	notify  chan struct{} // capacity 1: something changed

	exited  chan struct{} // closed after Wait returned
	waitErr error         // Wait's result, valid once exited is closed
	reaped  bool          // used by the test goroutine only
}

// procStderr keeps a child's standard error (bounded) so that a failing
// test can show it and a race report in a child fails the test.
type procStderr struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (e *procStderr) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.buf.Len() < 1<<20 {
		e.buf.Write(p)
	}
	return len(p), nil
}

func (e *procStderr) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.buf.String()
}

// startProc starts the test binary as helper mode with extra environment.
// The process is killed and reaped at cleanup if the test has not done so.
func startProc(t testing.TB, mode string, env ...string) *procChild {
	t.Helper()
	return startChild(t, nil, procModeEnv, mode, env...)
}

// startChild starts the test binary with args and modeEnv=mode plus extra
// environment, and returns its procChild (killed and reaped at cleanup if
// the test has not done so).
func startChild(t testing.TB, args []string, modeEnv, mode string, env ...string) *procChild {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	// The race runtime sleeps a second at exit by default; helpers exit
	// often. (exec keeps the last of duplicate variables.)
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), append([]string{modeEnv + "=" + mode, "GORACE=" + gorace}, env...)...)
	c := &procChild{mode: mode, cmd: cmd, stderr: &procStderr{}, notify: make(chan struct{}, 1), exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	c.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c.pid = cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.onLine(sc.Text())
		}
		c.mu.Lock()
		c.eof = true
		c.mu.Unlock()
		c.poke()
		// Wait only after stdout reached EOF, as os/exec requires.
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		if c.reaped {
			return
		}
		_ = c.stdin.Close()
		_ = cmd.Process.Kill()
		select {
		case <-c.exited:
		case <-time.After(procLineWithin):
			t.Errorf("child %s pid %d did not exit after SIGKILL", mode, c.pid)
			return
		}
		c.reaped = true
		c.checkStderr(t)
	})
	return c
}

func (c *procChild) onLine(l string) {
	c.mu.Lock()
	if rest, ok := strings.CutPrefix(l, "ack "); ok {
		if n, err := strconv.ParseUint(rest, 10, 64); err == nil {
			c.acks++
			c.lastAck = max(c.lastAck, n)
			c.mu.Unlock()
			c.poke()
			return
		}
	}
	c.lines = append(c.lines, l)
	c.mu.Unlock()
	c.poke()
}

func (c *procChild) poke() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// waitFor waits until cond (called with c.mu held) is true, failing the
// test if the helper's stdout ends first or within passes.
func (c *procChild) waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok, eof := cond(), c.eof
		c.mu.Unlock()
		if ok {
			return
		}
		if eof {
			<-c.exited
			require.FailNow(t, "helper exited while the test waited", "%s: helper %s pid %d: %v\nstderr:\n%s",
				what, c.mode, c.pid, c.waitErr, c.stderr)
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			require.FailNow(t, "timed out waiting for a helper", "%s: helper %s pid %d\nstderr:\n%s", what, c.mode, c.pid, c.stderr)
		}
	}
}

// next returns the helper's next line other than an ack.
func (c *procChild) next(t testing.TB) string {
	t.Helper()
	var l string
	c.waitFor(t, procLineWithin, "next line", func() bool {
		if c.read < len(c.lines) {
			l = c.lines[c.read]
			c.read++
			return true
		}
		return false
	})
	return l
}

// tryNext returns the next line other than an ack if one is queued.
func (c *procChild) tryNext() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read < len(c.lines) {
		c.read++
		return c.lines[c.read-1], true
	}
	return "", false
}

// waitAcks waits until the helper has acknowledged n appends in all.
func (c *procChild) waitAcks(t testing.TB, n int) {
	t.Helper()
	c.waitFor(t, procLineWithin, fmt.Sprintf("%d acks", n), func() bool { return c.acks >= n })
}

// ackState returns how many appends the helper acknowledged and the
// highest revision it acknowledged.
func (c *procChild) ackState() (n int, last uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acks, c.lastAck
}

// reap waits for the helper to exit (after its stdout is drained) and
// returns Wait's error.
func (c *procChild) reap(t testing.TB) error {
	t.Helper()
	if c.reaped {
		return c.waitErr
	}
	select {
	case <-c.exited:
	case <-time.After(procLineWithin):
		require.FailNow(t, "timed out waiting for a helper to exit", "helper %s pid %d", c.mode, c.pid)
	}
	c.reaped = true
	c.checkStderr(t)
	return c.waitErr
}

// kill sends SIGKILL and reaps the helper, which must have died of it
// (not exited on its own with an error before).
func (c *procChild) kill(t testing.TB) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	err := c.reap(t)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "helper %s pid %d", c.mode, c.pid)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL,
		"helper %s pid %d did not die of SIGKILL: %v\nstderr:\n%s", c.mode, c.pid, err, c.stderr)
}

// signal sends sig to the helper.
func (c *procChild) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig), "helper %s pid %d", c.mode, c.pid)
}

// stop closes the helper's stdin and requires a clean exit.
func (c *procChild) stop(t testing.TB) {
	t.Helper()
	_ = c.stdin.Close() // may be closed already
	err := c.reap(t)
	require.NoError(t, err, "helper %s pid %d\nstderr:\n%s", c.mode, c.pid, c.stderr)
}

func (c *procChild) checkStderr(t testing.TB) {
	t.Helper()
	if s := c.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		t.Errorf("helper %s pid %d reported a data race:\n%s", c.mode, c.pid, s)
	}
}

// procEnv is the environment that points a helper at a session.
func procEnv(dir string, id session.SessionID, seed uint64) []string {
	return []string{procDirEnv + "=" + dir, procIDEnv + "=" + string(id), procSeedEnv + "=" + strconv.FormatUint(seed, 10)}
}

// parseLine parses one line (without its newline) into a record, as the
// store's readers do.
func parseLine(line []byte, maxPayload int) (rawRecord, error) {
	m, payload, err := record.Parse(line, maxPayload)
	return rawRecord{Meta: m, Payload: payload}, err
}
