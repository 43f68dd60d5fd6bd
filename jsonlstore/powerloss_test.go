package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// The power-loss test runs a scripted workload on a store whose files live
// in a vfs.Sim and whose leases live in a simLeaser, and crashtest takes a
// point (a snapshot of the file system and of what the workload
// acknowledged) at every sync (just before it takes effect) and after the
// workload, and crashes each point many ways: with nothing pending
// surviving, with everything surviving, and with many seeds of the unkind
// model (any subset of unsynced writes, at 4 KiB granularity, renames
// before data, NUL extension). On every crashed state a fresh store, with
// a fresh leaser that remembers no generation, must show that nothing
// acknowledged was lost (plChecker.check). This file holds the workload
// and that checker; the harness is crashtest's.
//
// The workload (plWorkload) drives three sessions:
//
//	A: create, 50 appends, an append torn by a short write (the writer
//	   fails), a release, an acquire whose recovery moves the torn tail
//	   into a forensic file, two appends under the new generation;
//	B: create, 3 appends, delete (acknowledged);
//	C: create, 2 appends, still held at the end.
//
// interleaved, so that crashes land with several sessions in flight, and
// with a point right after A's recovery too. The sync-mutation test
// (syncmutation_test.go) runs the same workload with one sync made a no-op
// and shows that the checker then fails.
//
// This file is longer than the house limit because the workload, what it
// acknowledged, and the checker that judges crashed states against it
// are one unit, shared with the mutation test; splitting them would
// scatter the one definition of "nothing acknowledged is lost".

const (
	// plSeeds is the number of unkind crashes per snapshot;
	// plSeedsEnv overrides it.
	plSeeds    = 12
	plSeedsEnv = "JSONLSTORE_POWERLOSS_SEEDS"

	plRoot = "/sim/powerloss" // the store's root as the leaser sees it

	// plTornAt is the revision of A whose append is torn by a short write
	// of plTornBytes bytes (its record is longer: several pages).
	plTornAt    = 52
	plTornBytes = 6000
)

// The sessions of the workload, by index.
const (
	plA = iota
	plB
	plC
	plSessions
)

var plIDs = [plSessions]session.SessionID{"pl-a", "pl-b", "pl-c"}

// plSizes are the message sizes of successive revisions: records from a
// few hundred bytes to several pages, so that appends start and end at
// every kind of place within a 4 KiB page.
var plSizes = []int{120, 900, 4500, 300, 200, 1500, 6200, 80, 600, 2500}

// plSnapshot is revision rev of session id; variant tells apart the
// different snapshots written as the same revision (a torn attempt and the
// one the next holder writes; 9 for the checker's own appends). The
// store does not require a revision to follow from the previous one, so
// each revision is a small session of its own whose one message varies in
// size; the payload is a pure function of (id, rev, variant).
func plSnapshot(id session.SessionID, rev uint64, variant int) sessnap.Snapshot {
	s := sessiontest.New(string(id))
	if err := s.SetTitle(fmt.Sprintf("%s rev %d.%d", id, rev, variant), session.TitleGenerated); err != nil {
		panic(err)
	}
	n := plSizes[(int(rev)+3*variant)%len(plSizes)]
	if rev == plTornAt && variant == 0 {
		n = 2 * plTornBytes
	}
	r := rand.New(rand.NewPCG(rev, uint64(variant)<<32|uint64(len(id))))
	text := make([]byte, n)
	for i := range text {
		text[i] = 'a' + byte(r.IntN(26))
	}
	at := sessiontest.Epoch.Add(time.Duration(rev) * time.Second)
	if err := s.AppendMessage(session.TextMessage(session.RoleUser, string(text), at)); err != nil {
		panic(err)
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		panic(err)
	}
	return snap
}

// plPayloads caches the encoded payloads of plSnapshot.
var plPayloads sync.Map // plKey → []byte

type plKey struct {
	id      session.SessionID
	rev     uint64
	variant int
}

// plPayload is the payload the store writes for plSnapshot(id, rev,
// variant).
func plPayload(id session.SessionID, rev uint64, variant int) []byte {
	k := plKey{id, rev, variant}
	if b, ok := plPayloads.Load(k); ok {
		return b.([]byte)
	}
	b, err := adapter.EncodeSnapshot(id, plSnapshot(id, rev, variant), 0)
	if err != nil {
		panic(err)
	}
	plPayloads.Store(k, b)
	return b
}

// plAck is what the workload had been told was done when a point was
// taken: what must survive any crash of that point.
type plAck struct {
	creating [plSessions]bool   // Create was called
	created  [plSessions]bool   // Create returned
	rev      [plSessions]uint64 // last revision an Append (or Create) acknowledged
	deleting [plSessions]bool   // Delete was called
	deleted  [plSessions]bool   // Delete returned
	// truncating: A's recovery may have cut the torn tail from the log,
	// so its forensic copy must be durable. recovered: A's Acquire
	// returned, reporting the tail removed, so the removal is durable.
	truncating, recovered bool
}

// plRun is one run of the workload: its points, and what the checker
// needs to know of what it wrote.
type plRun struct {
	*crashtest.Recorder[plAck]
	// variants[i][rev] lists the variants of plSnapshot written as rev of
	// session i: a valid record must carry one of them.
	variants [plSessions]map[uint64][]int
	// torn is what the short write left in A's log at tornAt: the tail
	// that recovery must keep in a forensic file.
	torn   []byte
	tornAt int64
	st     *Store
}

// plWorkload runs the workload. With mutate ≥ 0 the sync call number
// mutate (counting every Sync, Datasync and SyncDir from 0) does nothing
// and reports success.
func plWorkload(t testing.TB, mutate int) *plRun {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[plAck](mutate)
	defer rec.Stop()
	sim, faulty := rec.Sim, rec.FS
	st := crashStore(t, rec, plRoot)
	run := &plRun{Recorder: rec, st: st}
	for i := range run.variants {
		run.variants[i] = map[uint64][]int{}
	}
	ack := &rec.Ack
	inRecovery := false
	rec.OnSync = func(op vfs.Op, name string) {
		if inRecovery && op == vfs.OpDatasync && name == layout.LogPath(plIDs[plA]) {
			ack.truncating = true // the sync of the truncation
		}
	}

	opts := sessionstore.AcquireOptions{Label: "powerloss"}
	create := func(i int) sessionstore.Writer {
		run.variants[i][1] = []int{0}
		ack.creating[i] = true
		w, err := st.Create(ctx, plSnapshot(plIDs[i], 1, 0), opts)
		require.NoError(t, err)
		ack.created[i], ack.rev[i] = true, 1
		return w
	}
	appendTo := func(i int, w sessionstore.Writer, variant int) {
		rev := ack.rev[i] + 1
		run.variants[i][rev] = append(run.variants[i][rev], variant)
		got, err := w.Append(ctx, ack.rev[i], plSnapshot(plIDs[i], rev, variant))
		require.NoError(t, err)
		require.Equal(t, rev, got)
		ack.rev[i] = got
	}

	wA := create(plA)
	for range 10 {
		appendTo(plA, wA, 0)
	}
	wB := create(plB)
	for j := range 9 {
		appendTo(plA, wA, 0)
		if j%3 == 0 {
			appendTo(plB, wB, 0)
		}
	}
	wC := create(plC)
	for j := range 15 {
		appendTo(plA, wA, 0)
		if j == 7 {
			appendTo(plC, wC, 0)
		}
	}
	ack.deleting[plB] = true
	require.NoError(t, wB.Delete(ctx))
	ack.deleted[plB] = true
	for j := range 16 {
		appendTo(plA, wA, 0)
		if j == 8 {
			appendTo(plC, wC, 0)
		}
	}
	require.Equal(t, uint64(plTornAt-1), ack.rev[plA], "50 appends to A")
	// The crashes meet both record kinds (with deltas on, the default).
	logA, err := sim.ReadFile(layout.LogPath(plIDs[plA]))
	require.NoError(t, err)
	kinds := kindsOf(logA)
	require.Positive(t, kinds[record.KindDelta], "%v", kinds)
	require.Greater(t, kinds[record.KindFull], 1, "%v", kinds)

	// A torn append: the write stops after plTornBytes bytes. The writer
	// fails, now and on a retry with the right expected revision, and
	// readers still see only what was acknowledged.
	before, err := sim.ReadFile(layout.LogPath(plIDs[plA]))
	require.NoError(t, err)
	run.variants[plA][plTornAt] = []int{0}
	faulty.Inject(vfs.Fault{Op: vfs.OpWrite, ShortWrite: plTornBytes})
	_, err = wA.Append(ctx, plTornAt-1, plSnapshot(plIDs[plA], plTornAt, 0))
	require.ErrorIs(t, err, sessionstore.ErrWriterFailed)
	require.ErrorIs(t, err, io.ErrShortWrite)
	_, err = wA.Append(ctx, plTornAt-1, plSnapshot(plIDs[plA], plTornAt, 0))
	require.ErrorIs(t, err, sessionstore.ErrWriterFailed)
	after, err := sim.ReadFile(layout.LogPath(plIDs[plA]))
	require.NoError(t, err)
	require.Len(t, after, len(before)+plTornBytes)
	run.tornAt, run.torn = int64(len(before)), after[len(before):]
	loaded, err := st.Load(ctx, plIDs[plA])
	require.NoError(t, err)
	require.Equal(t, uint64(plTornAt-1), loaded.Revision, "a torn record is never visible")
	require.NoError(t, wA.Release(ctx))

	// The next holder recovers: the torn tail goes to a forensic file.
	inRecovery = true
	wA, err = st.Acquire(ctx, plIDs[plA], opts)
	inRecovery = false
	require.NoError(t, err)
	ack.truncating, ack.recovered = true, true
	rec.Mark(plAfterRecovery)
	rep := wA.Recovery()
	require.Equal(t, uint64(2), wA.Generation())
	require.Equal(t, summary.LeaseFree, rep.Previous.State)
	require.Equal(t, run.tornAt, rep.TailOffset)
	require.Equal(t, int64(plTornBytes), rep.TailBytes)
	kept, err := sim.ReadFile(rep.ForensicFile)
	require.NoError(t, err)
	require.Equal(t, run.torn, kept)
	appendTo(plA, wA, 1)
	appendTo(plA, wA, 1)

	rec.Mark(plEnd)
	return run
}

// The points plWorkload marks, besides those at its syncs.
const (
	plAfterRecovery = "right after A's recovery"
	plEnd           = "end of workload"
)

// crashStore opens the store of a crash test's workload at root on rec's
// file system, leases in a simLeaser over its Sim, with a clock that
// repeats from run to run; it is closed at cleanup.
//
// The catalog's directories are made first, outside the recording: the
// workloads of these tests are about sessions, and the syncs of the
// catalog (a holder's mark, made durable once per lease) are proved by the
// catalog's own crash test (catalog_crash_test.go); their mutation runs
// leave them out (catalogSync).
func crashStore[A any](t testing.TB, rec *crashtest.Recorder[A], root string) *Store {
	withCatalogDirs(t, rec.Sim, false) // a sync here would be a point of the recording
	st := newStore(root, nil, rec.FS, newSimLeaser(rec.Sim, root), Options{Now: crashtest.Clock(sessiontest.Epoch)})
	t.Cleanup(func() { st.Close() })
	return st
}

// plChecker checks crashed states of one run.
type plChecker struct {
	run   *plRun
	stats *plStats // nil: none kept
}

// plStats counts what the crashed states held, to show that the checks
// met what they are about: torn tails, unacknowledged revisions that
// survived, creations and deletions caught half way, and summary.json
// missing, garbage or stale.
type plStats struct {
	states, tails, unacked               atomic.Int64
	createdUnacked, createLost           atomic.Int64
	deleteUnackedKept, deleteUnackedGone atomic.Int64
	summary                              [plSummaryKinds]atomic.Int64
}

// Kinds of summary.json found in a crashed state.
const (
	plSummaryMissing = iota
	plSummaryGarbage // empty, torn, NUL-filled: unparseable
	plSummaryStale   // parses, but names another log state
	plSummaryCurrent
	plSummaryKinds
)

var plSummaryNames = [plSummaryKinds]string{"missing", "garbage", "stale", "current"}

func (s *plStats) String() string {
	sum := ""
	for k := range s.summary {
		sum += fmt.Sprintf(" %s=%d", plSummaryNames[k], s.summary[k].Load())
	}
	return fmt.Sprintf("states=%d tails-removed=%d unacked-revisions-survived=%d create-in-flight(kept=%d lost=%d) delete-in-flight(kept=%d done=%d) summary.json:%s",
		s.states.Load(), s.tails.Load(), s.unacked.Load(), s.createdUnacked.Load(), s.createLost.Load(),
		s.deleteUnackedKept.Load(), s.deleteUnackedGone.Load(), sum)
}

// countSummary classifies session id's summary.json in a crashed state.
func (s *plStats) countSummary(crashed *vfs.Sim, id session.SessionID) {
	if s == nil {
		return
	}
	kind := plSummaryCurrent
	if _, err := crashed.Lstat(layout.SummaryPath(id)); err != nil {
		kind = plSummaryMissing
	} else if sf, ok := logfile.ReadSummary(crashed, id); !ok {
		kind = plSummaryGarbage
	} else if fi, err := crashed.Lstat(layout.LogPath(id)); err != nil || vfs.IdentityOf(fi) != sf.Log || fi.Size() != sf.LogSize {
		kind = plSummaryStale
	}
	s.summary[kind].Add(1)
}

// check opens a store on crashed, a state after a crash of point p, and
// returns the first violation of what must hold given what p
// acknowledged (a crashtest.Check). r drives a second crash, after the
// checker's own writes.
func (c *plChecker) check(crashed *vfs.Sim, p crashtest.Point[plAck], _ crashtest.Crash, r *rand.Rand) error {
	ctx := context.Background()
	ack := p.Ack
	leases := newSimLeaser(crashed, plRoot)
	st := newStore(plRoot, nil, crashed, leases, Options{})
	defer st.Close()

	st0 := c.stats
	if st0 != nil {
		st0.states.Add(1)
	}
	listed, err := plList(ctx, st)
	if err != nil {
		return err
	}
	if err := c.checkTorn(crashed, ack); err != nil {
		return err
	}
	type held struct {
		w   sessionstore.Writer
		rev uint64
	}
	var holders [plSessions]*held
	for i, id := range plIDs {
		rec, err := st.Load(ctx, id)
		exists := err == nil
		switch {
		case err != nil && !errors.Is(err, sessionstore.ErrNotFound):
			return crashtest.Violate("load", "%s: %w", id, err)
		case !exists && ack.created[i] && !ack.deleting[i]:
			return crashtest.Violate("acknowledged-create", "%s was created (rev %d acknowledged) but is gone: %v", id, ack.rev[i], err)
		case exists && ack.deleted[i]:
			return crashtest.Violate("acknowledged-delete", "%s was deleted but is back at revision %d", id, rec.Revision)
		case !exists:
			if ack.creating[i] && !ack.created[i] && st0 != nil {
				st0.createLost.Add(1)
			}
			if ack.deleting[i] && !ack.deleted[i] && st0 != nil {
				st0.deleteUnackedGone.Add(1)
			}
			if _, ok := listed[id]; ok {
				return crashtest.Violate("list", "%s is listed but Load says %v", id, err)
			}
			for _, err := range st.History(ctx, id) {
				if !errors.Is(err, sessionstore.ErrNotFound) {
					return crashtest.Violate("history", "%s is gone but History says %v", id, err)
				}
			}
			continue
		}
		if st0 != nil {
			st0.countSummary(crashed, id)
			switch {
			case !ack.created[i]:
				st0.createdUnacked.Add(1)
			case ack.deleting[i]:
				st0.deleteUnackedKept.Add(1)
			case rec.Revision > ack.rev[i]:
				st0.unacked.Add(1)
			}
		}
		if ack.created[i] && rec.Revision < ack.rev[i] {
			return crashtest.Violate("acknowledged-revision", "%s: latest revision %d, but %d was acknowledged", id, rec.Revision, ack.rev[i])
		}
		// The cap the records were written with is recorded (a reader
		// with a smaller one still reads them).
		if got, err := layout.RecordedCap(crashed, layout.SessionDir(id)); err != nil || got < sessionstore.DefaultMaxRecordBytes {
			return crashtest.Violate("record-cap", "%s: settings.json records cap %d (%v), the writer's was %d", id, got, err, sessionstore.DefaultMaxRecordBytes)
		}
		hist, err := c.history(ctx, st, crashed, i, rec.Revision)
		if err != nil {
			return err
		}
		if ls, ok := listed[id]; !ok {
			return crashtest.Violate("list", "%s (revision %d) is not listed", id, rec.Revision)
		} else if ls.Revision != rec.Revision || ls.Title != rec.Snapshot.Title {
			return crashtest.Violate("list", "%s: listed at revision %d %q, Load says %d %q", id, ls.Revision, ls.Title, rec.Revision, rec.Snapshot.Title)
		}

		// A new holder: a generation above every one in the log, a
		// recovery that removes nothing valid, and a working append.
		w, err := st.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "checker"})
		if err != nil {
			return crashtest.Violate("acquire", "%s: %w", id, err)
		}
		if g := hist.maxGen; w.Generation() <= g {
			return crashtest.Violate("generation", "%s: new holder has generation %d, the log has %d", id, w.Generation(), g)
		}
		if err := c.checkRecovery(crashed, i, w.Recovery(), hist); err != nil {
			return err
		}
		if w.Recovery().TailBytes > 0 && st0 != nil {
			st0.tails.Add(1)
		}
		next := rec.Revision + 1
		got, err := w.Append(ctx, rec.Revision, plSnapshot(id, next, 9))
		if err != nil || got != next {
			return crashtest.Violate("append", "%s: new holder's append of %d: %d, %v", id, next, got, err)
		}
		holders[i] = &held{w: w, rev: got}
	}
	listed, err = plList(ctx, st)
	if err != nil {
		return err
	}
	for i, h := range holders {
		if h == nil {
			continue
		}
		if ls := listed[plIDs[i]]; ls.Revision != h.rev {
			return crashtest.Violate("list", "%s: listed at %d after the new holder's append of %d", plIDs[i], ls.Revision, h.rev)
		}
		_ = h.w.Release(ctx)
	}

	// Crash again, after the checker's acknowledged appends: they survive,
	// and with the lease memory lost once more the next holder's
	// generation is still higher.
	again := crashed.Crash(r)
	st2 := newStore(plRoot, nil, again, newSimLeaser(again, plRoot), Options{})
	defer st2.Close()
	for i, h := range holders {
		if h == nil {
			continue
		}
		id := plIDs[i]
		rec, err := st2.Load(ctx, id)
		if err != nil || rec.Revision != h.rev {
			return crashtest.Violate("second-crash", "%s: Load after a second crash: revision %d (want %d), %v", id, rec.Revision, h.rev, err)
		}
		w, err := st2.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
		if err != nil {
			return crashtest.Violate("second-crash", "%s: acquire: %w", id, err)
		}
		g := w.Generation()
		_ = w.Release(ctx)
		if g <= h.w.Generation() {
			return crashtest.Violate("generation", "%s: after a second crash, generation %d after %d", id, g, h.w.Generation())
		}
	}
	return nil
}

// plHistory is what History showed of a session.
type plHistory struct {
	n      uint64
	maxGen uint64
	end    int64  // end offset of the last record in the log
	log    []byte // the log's bytes
}

// history reads session i's History: revisions 1..latest, contiguous, no
// error. The same records, parsed from the log's bytes, are each a
// snapshot the workload wrote as that revision, byte for byte.
func (c *plChecker) history(ctx context.Context, st *Store, crashed *vfs.Sim, i int, latest uint64) (plHistory, error) {
	id := plIDs[i]
	var h plHistory
	for rec, err := range st.History(ctx, id) {
		if err != nil {
			return h, crashtest.Violate("history", "%s after revision %d: %w", id, h.n, err)
		}
		if rec.Revision != h.n+1 {
			return h, crashtest.Violate("history", "%s: revision %d after %d", id, rec.Revision, h.n)
		}
		h.n = rec.Revision
		h.maxGen = max(h.maxGen, rec.Generation)
	}
	if h.n != latest {
		return h, crashtest.Violate("history", "%s: History ends at %d, Load says %d", id, h.n, latest)
	}
	log, err := crashed.ReadFile(layout.LogPath(id))
	if err != nil {
		return h, crashtest.Violate("history", "%s: %w", id, err)
	}
	h.log = log
	recs := plRecords(log)
	if uint64(len(recs)) != h.n {
		return h, crashtest.Violate("history", "%s: History has %d revisions, the log %d valid records before its tail", id, h.n, len(recs))
	}
	snaps, err := rebuildAll(recs)
	if err != nil {
		return h, crashtest.Violate("payload", "%s: %w", id, err)
	}
	for k, r := range recs {
		if err := c.checkPayload(i, r.Rev, snaps[k]); err != nil {
			return h, err
		}
		h.maxGen = max(h.maxGen, r.Gen)
	}
	if len(recs) > 0 {
		h.end = recs[len(recs)-1].End()
	}
	return h, nil
}

// plRecords parses the valid records at the start of a log, up to the
// first line that is not one.
func plRecords(log []byte) []record.Rec {
	var out []record.Rec
	for off := 0; off < len(log); {
		j := bytes.IndexByte(log[off:], '\n')
		if j < 0 {
			break
		}
		rec, err := parseLine(log[off:off+j], sessionstore.DefaultMaxRecordBytes)
		if err != nil {
			break
		}
		rec.Offset, rec.LineLen = int64(off), int64(j+1)
		out = append(out, rec)
		off += j + 1
	}
	return out
}

// checkPayload checks that payload is a snapshot written as revision rev
// of session i (or the checker's own).
func (c *plChecker) checkPayload(i int, rev uint64, payload []byte) error {
	id := plIDs[i]
	if bytes.Equal(payload, plPayload(id, rev, 9)) {
		return nil
	}
	for _, v := range c.run.variants[i][rev] { // shared by checkers: read only
		if bytes.Equal(payload, plPayload(id, rev, v)) {
			return nil
		}
	}
	return crashtest.Violate("payload", "%s revision %d is not a snapshot written as that revision", id, rev)
}

// checkRecovery checks what a new holder's recovery did to session i's
// log: it kept every valid record byte for byte, and removed exactly the
// bytes after the last one, into a forensic file.
func (c *plChecker) checkRecovery(crashed *vfs.Sim, i int, rep sessionstore.RecoveryReport, hist plHistory) error {
	id, before := plIDs[i], hist.log
	after, err := crashed.ReadFile(layout.LogPath(id))
	if err != nil {
		return crashtest.Violate("recovery", "%s: %w", id, err)
	}
	if rep.TailBytes == 0 {
		if !bytes.Equal(before, after) {
			return crashtest.Violate("recovery", "%s: log changed (%d → %d bytes) without a reported tail", id, len(before), len(after))
		}
		if int64(len(after)) != hist.end {
			return crashtest.Violate("recovery", "%s: %d bytes after the last record left in the log", id, int64(len(after))-hist.end)
		}
		return nil
	}
	end := rep.TailOffset
	switch {
	case end != hist.end:
		return crashtest.Violate("recovery", "%s: tail removed from %d, the last record ends at %d", id, end, hist.end)
	case end+rep.TailBytes != int64(len(before)):
		return crashtest.Violate("recovery", "%s: tail %d+%d does not end the log of %d bytes", id, end, rep.TailBytes, len(before))
	case !bytes.Equal(after, before[:end]):
		return crashtest.Violate("recovery", "%s: log is not its first %d bytes after recovery", id, end)
	}
	kept, err := crashed.ReadFile(rep.ForensicFile)
	if err != nil || !bytes.Equal(kept, before[end:]) {
		return crashtest.Violate("recovery", "%s: forensic file %q does not hold the removed tail: %v", id, rep.ForensicFile, err)
	}
	return nil
}

// checkTorn checks what became of the bytes A's torn append left: once
// recovery may have cut them from the log, a forensic copy is durable;
// once the recovery was acknowledged, the cut is durable too (the tail
// does not come back for another holder to report again).
func (c *plChecker) checkTorn(crashed *vfs.Sim, ack plAck) error {
	if !ack.truncating {
		return nil
	}
	id := plIDs[plA]
	log, err := crashed.ReadFile(layout.LogPath(id))
	if err != nil {
		return crashtest.Violate("torn-tail", "%s: %w", id, err)
	}
	inLog := int64(len(log)) >= c.run.tornAt+int64(len(c.run.torn)) &&
		bytes.Equal(log[c.run.tornAt:c.run.tornAt+int64(len(c.run.torn))], c.run.torn)
	if inLog && ack.recovered {
		return crashtest.Violate("torn-tail", "%s: the tail recovery reported removed is back in the log", id)
	}
	if inLog {
		return nil
	}
	dir := layout.SessionDir(id) + "/" + ForensicDir
	entries, _ := crashed.ReadDir(dir)
	for _, e := range entries {
		if b, err := crashed.ReadFile(dir + "/" + e.Name()); err == nil && bytes.Equal(b, c.run.torn) {
			return nil
		}
	}
	return crashtest.Violate("torn-tail", "%s: the torn tail is neither in the log nor in a forensic file (%d forensic files)", id, len(entries))
}

// plList lists every session, by ID.
func plList(ctx context.Context, st *Store) (map[session.SessionID]summary.Summary, error) {
	page, err := st.List(ctx, summary.Query{Limit: summary.MaxLimit})
	if err != nil {
		return nil, crashtest.Violate("list", "%w", err)
	}
	out := map[session.SessionID]summary.Summary{}
	for _, s := range page.Items {
		if !slices.Contains(plIDs[:], s.ID) {
			return nil, crashtest.Violate("list", "unexpected session %q listed", s.ID)
		}
		out[s.ID] = s
	}
	return out, nil
}

func TestPowerLoss(t *testing.T) {
	seeds := proctest.EnvInt(t, plSeedsEnv, plSeeds)
	start := time.Now()
	run := plWorkload(t, -1)
	points := run.Points()
	require.Len(t, points, 78+2, "sync points of the workload changed: update the count")
	built := time.Since(start)

	c := &plChecker{run: run, stats: &plStats{}}
	states, distinct := crashtest.Sweep(t, points, seeds, c.check)
	t.Logf("%d sync points, %d crashed states (%d seeds each), %d distinct; workload %v, total %v",
		len(points)-2, states, seeds, distinct, built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	t.Logf("what the crashed states held: %s", c.stats)
	if seeds >= plSeeds {
		st := c.stats
		crashtest.Met(t, map[string]int64{
			"a torn tail removed":                  st.tails.Load(),
			"an unacknowledged revision surviving": st.unacked.Load(),
			"a creation in flight kept":            st.createdUnacked.Load(),
			"a creation in flight lost":            st.createLost.Load(),
			"a deletion in flight undone":          st.deleteUnackedKept.Load(),
			"a deletion in flight done":            st.deleteUnackedGone.Load(),
			"a garbage summary.json":               st.summary[plSummaryGarbage].Load(),
			"a stale summary.json":                 st.summary[plSummaryStale].Load(),
		})
	}
}

// TestPowerLossCheckerHasTeeth makes sure the checker fails on damage it
// must see, so that a passing TestPowerLoss means something: a lost
// acknowledged revision, a resurrected deletion, a truncated history.
func TestPowerLossCheckerHasTeeth(t *testing.T) {
	run := plWorkload(t, -1)
	c := &plChecker{run: run}
	points := run.Points()
	end := points[len(points)-1]
	r := crashtest.Rand(0, 0)
	all := crashtest.Crash{Kind: crashtest.All}
	require.NoError(t, c.check(end.Sim.CrashAll(), end, all, r))

	lying := end
	lying.Ack.rev[plA]++
	err := c.check(end.Sim.CrashAll(), lying, all, r)
	var v *crashtest.Violation
	require.ErrorAs(t, err, &v)
	require.Equal(t, "acknowledged-revision", v.Check)

	// The state just before B's deletion became durable, judged as if it
	// had been acknowledged: some crash brings B back.
	for _, p := range points {
		if p.Ack.deleting[plB] && !p.Ack.deleted[plB] {
			lying := p
			lying.Ack.deleted[plB] = true
			require.ErrorAs(t, c.check(p.Sim.CrashDurableOnly(), lying, crashtest.Crash{Kind: crashtest.DurableOnly}, r), &v)
			require.Equal(t, "acknowledged-delete", v.Check)
			break
		}
	}

	// Damage in the middle of A's log: History must fail.
	damaged := end.Sim.CrashAll()
	log, err := damaged.ReadFile(layout.LogPath(plIDs[plA]))
	require.NoError(t, err)
	log[len(log)/2] ^= 0x04
	f, err := damaged.OpenFile(layout.LogPath(plIDs[plA]), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.Write(log)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.ErrorAs(t, c.check(damaged, end, all, r), &v)
	require.Equal(t, "history", v.Check)
}
