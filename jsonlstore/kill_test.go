package jsonlstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// TestKillDuringAppend kills, round after round, a helper process that
// appends deterministic revisions (procSession) to one session as fast as
// it can: with SIGKILL, at a random moment — at once, after a random delay
// of up to killDelayMax, right after an acknowledgment, or as soon as the
// log starts growing under a large revision's write.
//
// After each kill, before anyone recovers anything, readers must see no
// partial record: Load works and returns a revision at least as high as
// the last one the helper acknowledged (acknowledged means durable), and
// History yields revisions 1..N with no gap and no error. Every revision is
// compared, byte for byte, with what the generator wrote for it. Then the
// parent takes the lease: it must find the dead holder stale, get a higher
// generation, keep every valid record, and remove a tail exactly when the
// log ended with a torn write, keeping it in a forensic file that holds a
// prefix of the line the helper was writing. It releases, and the next
// round's helper continues the same log.
//
// The count of rounds in which recovery removed a tail is logged: it
// proves that the kills land in the middle of writes (one revision in
// procLargeEvery is 64–300 KiB, written with one write(2), which a SIGKILL
// interrupts between pages).
//
// A soak run (killRoundsEnv) moves to a new session every killEpochRounds
// rounds, so that the cost of a round does not grow without bound with the
// log it reads.
func TestKillDuringAppend(t *testing.T) {
	rounds := proctest.EnvInt(t, killRoundsEnv, killRounds)
	seed := procSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))
	dir := t.TempDir()
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	verifyAtCleanup(t, st)
	t.Cleanup(func() { st.Close() })

	start := time.Now()
	var total killStats
	kinds := map[string]int{}
	for epoch := 1; rounds > 0; epoch++ {
		n := min(rounds, killEpochRounds)
		rounds -= n
		id := session.SessionID(fmt.Sprintf("kill-%d", epoch))
		s := killEpoch(t, st, dir, id, seed, rng, n, false)
		t.Logf("%s: %s", id, s)
		total.add(s)
		for k, n := range logKinds(t, filepath.Join(dir, filepath.FromSlash(layout.LogPath(id)))) {
			kinds[k] += n
		}
	}
	t.Logf("all sessions, %s: %s; records by kind %v", time.Since(start).Round(time.Millisecond), total, kinds)
	require.Positive(t, kinds[record.KindDelta], "the helpers wrote delta records")
	if total.rounds >= killRounds {
		require.Positive(t, total.tails, "no kill landed in the middle of a write: make the large revisions larger")
	}
}

// TestKillDuringAppendWithBlobs is TestKillDuringAppend with content out
// of line: the helpers' large revisions go into blobs (and a long session
// into pages), so the kills land in blob writes too. Every acknowledged
// revision must load with its content, and the store must verify at the
// end (every referenced blob there and whole).
func TestKillDuringAppendWithBlobs(t *testing.T) {
	rounds := min(proctest.EnvInt(t, killRoundsEnv, killRounds), killBlobRounds)
	seed := procSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x626c6f62))
	dir := t.TempDir()
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	verifyAtCleanup(t, st)
	t.Cleanup(func() { st.Close() })
	s := killEpoch(t, st, dir, "kill-blobs", seed, rng, rounds, true)
	t.Logf("kill-blobs: %s", s)
	names, err := blobfile.Names(st.fs, "kill-blobs")
	require.NoError(t, err)
	require.NotEmpty(t, names, "the helpers wrote blobs")
}

const (
	// killBlobRounds bounds TestKillDuringAppendWithBlobs's rounds.
	killBlobRounds = 80
	// killRounds is the number of holders TestKillDuringAppend kills;
	// killRoundsEnv overrides it (make soak: 5000).
	killRounds    = 200
	killRoundsEnv = "JSONLSTORE_KILL_ROUNDS"
	// killEpochRounds is the number of rounds run on one session.
	killEpochRounds = 250
	// killDeadlineMargin: a run stops, failing, when the test's deadline
	// (-timeout) is this near, rather than panic and leave its helper
	// unreaped.
	killDeadlineMargin = 30 * time.Second
	// killDelayMax bounds the random delay between a helper's "ready" and
	// its SIGKILL, in the rounds that kill after a delay.
	killDelayMax = 5 * time.Millisecond
	// Reading the whole history costs as much as the log is long (and
	// under -race about 100 ms per MiB), and the log grows every round: so
	// it is read at most once every killHistoryTorn rounds when the kill
	// left a torn tail (the case that matters), at least once every
	// killHistoryEvery rounds, and after the last round. Each read checks
	// all the revisions written since the previous one against the
	// generator; the other rounds check the latest (Load).
	killHistoryTorn  = 10
	killHistoryEvery = 25
)

// killStats counts what the rounds of TestKillDuringAppend did.
type killStats struct {
	rounds    int
	how       [4]int // kills at once, after a delay, right after an ack, aimed at a large write
	appended  uint64 // revisions the helpers wrote
	logBytes  int64
	tails     int // rounds whose recovery removed a tail
	tornBlobs int // temporary blob files a takeover swept
	tailBytes int64
	unacked   int // rounds that left a whole record the helper had not acknowledged
	histories int // full history reads after a kill
	tornReads int // … of a log that ended with a torn write
	reads     time.Duration
	recovers  time.Duration
}

func (s *killStats) add(o killStats) {
	s.tornBlobs += o.tornBlobs
	s.rounds += o.rounds
	for i := range s.how {
		s.how[i] += o.how[i]
	}
	s.appended += o.appended
	s.logBytes += o.logBytes
	s.tails += o.tails
	s.tailBytes += o.tailBytes
	s.unacked += o.unacked
	s.histories += o.histories
	s.tornReads += o.tornReads
	s.reads += o.reads
	s.recovers += o.recovers
}

func (s killStats) String() string {
	return fmt.Sprintf("%d rounds (kills: %d at once, %d after a delay, %d right after an ack, %d aimed at a large write); "+
		"%d revisions appended, log %d KiB; tails removed in %d rounds (%d KiB in all); "+
		"%d rounds left a whole unacknowledged record; %d torn blob files swept; reads after kills %s (%d full histories, %d of them with a torn tail); recoveries %s",
		s.rounds, s.how[0], s.how[1], s.how[2], s.how[3], s.appended, s.logBytes>>10, s.tails, s.tailBytes>>10,
		s.unacked, s.tornBlobs, s.reads.Round(time.Millisecond), s.histories, s.tornReads, s.recovers.Round(time.Millisecond))
}

// killEpoch runs rounds kill rounds on session id (see TestKillDuringAppend).
func killEpoch(t *testing.T, st *Store, dir string, id session.SessionID, seed uint64, rng *rand.Rand, rounds int, blobs bool) killStats {
	t.Helper()
	ctx := t.Context()
	logFile := filepath.Join(dir, filepath.FromSlash(layout.LogPath(id)))
	var (
		s           = killStats{rounds: rounds}
		latest      uint64 // the log's last revision when the previous round ended
		lastGen     uint64 // the generation of the previous round's last holder (the parent)
		verified    uint64 // revisions already compared with the generator by a history read
		lastHistory = -killHistoryEvery
	)
	for round := range rounds {
		if deadline, ok := t.Deadline(); ok && time.Until(deadline) < killDeadlineMargin {
			t.Fatalf("%s: stopped before round %d: the test's deadline is near (a soak run needs a larger -timeout)", id, round)
		}
		env := procEnv(dir, id, seed)
		if blobs {
			env = append(env, procBlobsEnv+"=1")
		}
		child := startProc(t, procModeAppend, env...)
		ready := procParseAcquired(t, child.Next(t), "ready")
		if round == 0 {
			require.Equal(t, procAcquired{Gen: 1, Rev: 1}, ready, "%s: the first helper creates the session", id)
		} else {
			require.Greater(t, ready.Gen, lastGen, "%s round %d: generations must strictly increase", id, round)
			require.Equal(t, latest, ready.Rev, "%s round %d: the helper must start where the last round ended", id, round)
			require.Equal(t, summary.LeaseFree, ready.Prev, "%s round %d: the parent released cleanly", id, round)
			require.Zero(t, ready.Tail, "%s round %d: the parent left no tail", id, round)
		}

		// Kill at a random moment.
		switch rng.IntN(5) {
		case 0: // at once
			s.how[0]++
		case 1: // after a random delay
			s.how[1]++
			time.Sleep(time.Duration(rng.Int64N(int64(killDelayMax))))
		case 2: // right after an acknowledgment
			s.how[2]++
			n, _ := child.Acks()
			child.WaitAcks(t, n+1+rng.IntN(2))
		default: // as soon as the log grows under a large write
			s.how[3]++
			killAimAtLargeWrite(t, child, logFile, id, seed, ready.Rev)
		}
		child.Kill(t)
		_, lastAck := child.Acks()
		lastAck = max(lastAck, ready.Rev) // the helper started from a durable revision

		// Before any recovery: no partial record is visible to readers.
		t0 := time.Now()
		lease, err := st.Lease(ctx, id)
		require.NoError(t, err)
		require.Equal(t, summary.LeaseStale, lease.State, "%s round %d: the killed holder's lease", id, round)
		rec, err := st.Load(ctx, id)
		require.NoError(t, err, "%s round %d: load after kill", id, round)
		require.NoError(t, procCheckRecord(id, seed, rec), "%s round %d: load after kill", id, round)
		require.GreaterOrEqual(t, rec.Revision, lastAck, "%s round %d: an acknowledged revision was lost", id, round)
		// The helper acknowledges each append before it starts the next:
		// at most one whole record can be unacknowledged.
		require.LessOrEqual(t, rec.Revision, lastAck+1, "%s round %d: more than the helper wrote", id, round)
		size, torn := killLogEnd(t, logFile)
		if torn && round-lastHistory >= killHistoryTorn || round-lastHistory >= killHistoryEvery || round == rounds-1 {
			hist, err := procCheckHistory(ctx, st, id, seed, verified)
			require.NoError(t, err, "%s round %d: history after kill", id, round)
			require.Equal(t, rec.Revision, hist.Latest, "%s round %d: load and history disagree", id, round)
			s.histories++
			if torn {
				s.tornReads++
			}
			lastHistory = round
			verified = rec.Revision
		}
		if rec.Revision > lastAck {
			s.unacked++
		}
		s.reads += time.Since(t0)

		// The next holder recovers.
		t0 = time.Now()
		w, err := st.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "kill-test"})
		require.NoError(t, err, "%s round %d: acquire after kill", id, round)
		rep := w.Recovery()
		require.Equal(t, summary.LeaseStale, rep.Previous.State, "%s round %d: previous holder", id, round)
		require.Equal(t, ready.Gen, rep.Previous.Generation, "%s round %d: previous holder's generation", id, round)
		require.Greater(t, w.Generation(), ready.Gen, "%s round %d: generation after recovery", id, round)
		require.Equal(t, rec.Revision, w.Revision(), "%s round %d: recovery must not remove a valid record", id, round)
		require.Equal(t, torn, rep.TailBytes > 0, "%s round %d: a tail must be removed exactly when the log ends with a torn write (%+v)", id, round, rep)
		if torn {
			s.tails++
			s.tailBytes += rep.TailBytes
			require.Equal(t, size, rep.TailOffset+rep.TailBytes, "%s round %d: the tail ends where the log did", id, round)
			killCheckTail(t, dir, rep, id, seed, rec.Revision, ready.Gen, blobs)
			after, torn := killLogEnd(t, logFile)
			require.False(t, torn)
			require.Equal(t, rep.TailOffset, after, "%s round %d: log size after recovery", id, round)
		}
		after, err := st.Load(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rec.Revision, after.Revision, "%s round %d: load after recovery", id, round)
		s.recovers += time.Since(t0)
		for _, p := range rep.Swept {
			if strings.Contains(p, "/"+BlobDir+"/") {
				s.tornBlobs++
			}
		}

		s.appended += rec.Revision - ready.Rev
		latest, lastGen = w.Revision(), w.Generation()
		require.NoError(t, w.Release(ctx))
	}
	fi, err := os.Stat(logFile)
	require.NoError(t, err)
	s.logBytes = fi.Size()
	return s
}

// killCheckTail checks the forensic copy of a removed tail: it has the
// reported size, it is not a whole line, and it is a prefix of the line
// the dead holder (generation gen) was writing for revision last+1 — the
// torn write, and nothing else.
func killCheckTail(t *testing.T, dir string, rep sessionstore.RecoveryReport, id session.SessionID, seed, last, gen uint64, blobs bool) {
	t.Helper()
	require.NotEmpty(t, rep.ForensicFile)
	tail, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rep.ForensicFile)))
	require.NoError(t, err, "forensic file")
	require.Len(t, tail, int(rep.TailBytes), "forensic file size")
	require.NotContains(t, string(tail), "\n", "a torn append leaves no newline")
	if blobs {
		// With content out of line the line's payload depends on the
		// writer's chain and pages: the tail must be the start of revision
		// last+1's line by this holder, of a kind it writes.
		for _, v := range []int{record.Version1, record.Version2, record.Version4} {
			head := fmt.Appendf(nil, `{"v":%d,"schema":%d,"rev":%d,"gen":%d,"time":"`, v, sessnap.SchemaVersion, last+1, gen)
			n := min(len(tail), len(head))
			if !bytes.Equal(head[:n], tail[:n]) {
				continue
			}
			rest := tail[n:]
			if q := bytes.IndexByte(rest, '"'); q >= 0 {
				rest = rest[q+1:]
				for _, kind := range []string{`,"kind":"full","len":`, `,"kind":"delta","len":`} {
					if m := min(len(rest), len(kind)); bytes.Equal(rest[:m], []byte(kind)[:m]) {
						return
					}
				}
				continue
			}
			return
		}
		t.Fatalf("tail of %d bytes is not the start of revision %d's line: %.80q", len(tail), last+1, tail)
	}

	// The torn line was a full record (format 1) or a delta (format 2)
	// against revision last, whichever the writer's chain policy chose.
	payload, err := sessnap.Encode(procSession(id, seed, last+1))
	require.NoError(t, err)
	type candidate struct{ head, rest []byte }
	cands := []candidate{{
		fmt.Appendf(nil, `{"v":%d,"schema":%d,"rev":%d,"gen":%d,"time":"`, record.VersionOf(record.KindFull), sessnap.SchemaVersion, last+1, gen),
		fmt.Appendf(nil, `,"kind":"%s","len":%d,"snap":%s`, record.KindFull, len(payload), payload),
	}}
	if last >= 1 {
		prev, err := sessnap.Encode(procSession(id, seed, last))
		require.NoError(t, err)
		if d, ok := record.Diff(prev, payload); ok {
			cands = append(cands, candidate{
				fmt.Appendf(nil, `{"v":%d,"schema":%d,"rev":%d,"gen":%d,"time":"`, record.VersionOf(record.KindDelta), sessnap.SchemaVersion, last+1, gen),
				fmt.Appendf(nil, `,"kind":"%s","len":%d,"delta":%s`, record.KindDelta, len(d), d),
			})
		}
	}
	matches := func(c candidate) bool {
		if len(tail) <= len(c.head) {
			return bytes.Equal(c.head[:len(tail)], tail)
		}
		if !bytes.HasPrefix(tail, c.head) {
			return false
		}
		rest := tail[len(c.head):]
		q := bytes.IndexByte(rest, '"')
		if q < 0 {
			return true // torn inside the time stamp
		}
		got := rest[q+1:]
		n := min(len(got), len(c.rest))
		return bytes.Equal(c.rest[:n], got[:n])
	}
	for _, c := range cands {
		if matches(c) {
			return
		}
	}
	t.Fatalf("tail of %d bytes is not a prefix of revision %d's line: %.80q", len(tail), last+1, tail)
}

// killAimAtLargeWrite lets the helper append until the next revision it
// will write is a large one, then polls the log's size and returns as soon
// as it grows: the helper is then inside the write(2) of that revision,
// and a SIGKILL now is likely to tear it.
func killAimAtLargeWrite(t *testing.T, child *proctest.Child, logFile string, id session.SessionID, seed, from uint64) {
	t.Helper()
	_, last := child.Acks()
	last = max(last, from)
	for !procLarge(id, seed, last+1) {
		last++
	}
	child.WaitAck(t, last)
	f, err := os.Open(logFile)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	base := fi.Size()
	check := child.Watch(t, "the log to grow")
	for i := 0; ; i++ {
		fi, err := f.Stat()
		require.NoError(t, err)
		if fi.Size() != base {
			return
		}
		if i%1024 == 0 {
			check()
		}
	}
}

// killLogEnd returns the log's size and whether it ends with bytes that
// are not a whole line (a torn write).
func killLogEnd(t *testing.T, logFile string) (size int64, torn bool) {
	t.Helper()
	f, err := os.Open(logFile)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	if fi.Size() == 0 {
		return 0, false
	}
	var b [1]byte
	_, err = f.ReadAt(b[:], fi.Size()-1)
	require.NoError(t, err)
	return fi.Size(), b[0] != '\n'
}
