package jsonlstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Process tests (kill_test.go, readrace_test.go, copy_test.go,
// compact_race_test.go, compact_kill_test.go) run the store in real
// processes through proctest: the test binary re-executes itself with
// procModeEnv set to a helper mode, and TestMain runs procHelper instead
// of the tests. A helper reports on stdout, one line per event (one
// write(2) per line), and the parent reads those lines with deadlines:
// that, never a sleep, is how parent and child synchronise.
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
	// procBlobsEnv=1 makes an append helper keep large content out of
	// line (the store's default) instead of inline.
	procBlobsEnv = "JSONLSTORE_PROC_BLOBS"
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
	// The compaction children (compact_kill_test.go, compact_bench_test.go)
	// open the store themselves: see compactChild.
	procModeCompact = "compact"
	// procModeGrow: acquire session ID (creating it if it does not
	// exist), print "ready", then grow its conversation by one message
	// of words (searchGrowText) an append, printing "ack REV" after each,
	// until stdin closes (search_proc_test.go).
	procModeGrow         = "grow"
	procModeBenchCompact = "bench-compact"
	procModeBenchRaw     = "bench-raw"
	// procModeCreateKilled: create session ID and die of SIGKILL right
	// after publishing it (create_kill_test.go: createKilledChild).
	procModeCreateKilled = "create-killed"
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

// procHelper runs helper mode mode (TestMain's proctest.Helper calls it).
func procHelper(mode string) error {
	ctx := context.Background()
	switch mode {
	case procModeCompact, procModeBenchCompact, procModeBenchRaw:
		return compactChild(ctx, mode)
	case procModeCatalogWriter, procModeCatalogRebuilder, procModeCatalogLister:
		return catalogChild(ctx, mode)
	case procModeCreateKilled:
		return createKilledChild(ctx)
	case procModeRetireKill:
		return retireKillChild(ctx)
	case procModeRedactKill:
		return redactKillChild(ctx)
	case procModeIndexLock:
		return indexLockChild(ctx)
	case procModeWriterLock:
		return writerLockChild()
	case procModeResume:
		return resumeChild(ctx)
	case procModeBackupKill:
		return backupKillChild(ctx)
	case procModeSyncKill:
		return syncKillChild(ctx)
	case procModeRewindKill:
		return rewindKillChild(ctx)
	}
	id := session.SessionID(os.Getenv(procIDEnv))
	seed, err := strconv.ParseUint(os.Getenv(procSeedEnv), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", procSeedEnv, err)
	}
	// Content stays inline (BlobThreshold -1): a large revision is one
	// large write(2) of the log, which the kill tests aim at; with
	// procBlobsEnv, it goes out of line as the store's default does.
	opts := Options{BlobThreshold: -1, Search: searchindex.New()}
	if os.Getenv(procBlobsEnv) == "1" {
		opts.BlobThreshold = 0
	}
	st, err := Open(os.Getenv(procDirEnv), opts)
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
	case procModeGrow:
		return searchGrow(ctx, st, id, seed, stopped)
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
	if err := st.root.Exists(id); errors.Is(err, sessionstore.ErrNotFound) {
		snap, err := procSnapshot(id, seed, 1)
		if err != nil {
			return nil, err
		}
		w, err := st.Create(ctx, snap, opts)
		if !errors.Is(err, sessionstore.ErrExists) {
			return w, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, proctest.ChildWait)
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

// procSeed returns the seed of a process test: fixed per test, so that
// `make test` makes the same choices on every run and never passes or
// fails by the luck of a seed; procSeedOverrideEnv replays a seed, and
// `make seeds` runs each process test over many.
func procSeed(t testing.TB) uint64 {
	t.Helper()
	return proctest.Seed(t, procSeedOverrideEnv)
}

// procAcquired is a parsed "ready"/"acquired" line.
type procAcquired struct {
	Gen, Rev, Tail uint64
	Prev           summary.LeaseState
}

func procParseAcquired(t testing.TB, line, verb string) procAcquired {
	t.Helper()
	m := proctest.Fields(t, line, verb)
	a := procAcquired{Gen: proctest.Uint(t, m, "gen"), Rev: proctest.Uint(t, m, "rev"), Tail: proctest.Uint(t, m, "tail"), Prev: summary.LeaseState(m["prev"])}
	if a.Prev == "none" {
		a.Prev = summary.LeaseUnknown
	}
	return a
}

// startProc starts the test binary as helper mode with extra environment;
// its "ack REV" lines are counted (proctest.Child.Acks). It is killed and
// reaped at cleanup if the test has not done so.
func startProc(t testing.TB, mode string, env ...string) *proctest.Child {
	t.Helper()
	return proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: mode, Env: env, Acks: true})
}

// procEnv is the environment that points a helper at a session.
func procEnv(dir string, id session.SessionID, seed uint64) []string {
	return []string{procDirEnv + "=" + dir, procIDEnv + "=" + string(id), procSeedEnv + "=" + strconv.FormatUint(seed, 10)}
}

// parseLine parses one line (without its newline) into a record, as the
// store's readers do.
func parseLine(line []byte, maxPayload int) (record.Rec, error) {
	m, payload, err := record.Parse(line, maxPayload)
	return record.Rec{Meta: m, Payload: payload}, err
}
