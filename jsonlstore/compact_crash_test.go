package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The compaction crash tests: a crash injected at every step of a
// compaction leaves either the old state or the new one, and after
// recovery every revision is readable exactly once.
//
// ccWorkload drives one session on a vfs.Sim store (leases in a
// simLeaser) through compactions of every kind, and crashtest takes a
// point (a snapshot of the file system and of what the workload
// acknowledged) at every sync point of each compaction (just before the
// sync takes effect), at the first sync point after it, and at the end:
//
//	create, append to 24;
//	C1  the holder compacts (KeepLast 12): the first segment, 1-12;
//	    append to 40;
//	C2  the holder compacts (KeepLast 10: revision 31, a delta, so the cut
//	    goes back to its full record, 30), and the log's rename fails: an
//	    error, the writer still usable, a listed segment (13-29)
//	    overlapping the log;
//	    append to 50;
//	C3  the holder compacts (KeepLast 15: 36, a delta; cut at 34),
//	    reclaiming C2's segment: 13-33;
//	    append to 55, release;
//	C4  standalone (Store.Compact), the manifest's write fails: an unlisted
//	    segment file (34-49; KeepLast 5 keeps 51, a delta, from 50);
//	    a new holder appends to 60;
//	C5  standalone (KeepLast 4), reclaiming C4's file: 34-56;
//	C6  standalone, the new log's fsync fails: a listed overlapping 57-59;
//	C7  standalone with nothing to trim (KeepLast 10): it only reclaims.
//
// The snapshots (plSnapshot) make the writer write full records at the
// revisions ending in 0, 3, 4 and 7 and deltas at the others; the
// workload checks that it does.
//
// Each point is crashed with nothing pending surviving, with everything
// surviving, and with seeds of the unkind model, and ccCheck judges
// every crashed state: see there. TestCompactSyncMutation silences each
// sync call of the successful compactions in turn and requires some
// crashed state to fail the check. This file holds the workload and the
// checker; the harness is crashtest's. The fault tests
// (compact_faults_test.go) and the kill test use the checker too.
//
// The file is longer than the house limit because the workload, what it
// acknowledged and the checker that judges crashed states against it are
// one unit, shared by the crash, mutation and fault tests (as in
// powerloss_test.go).

const (
	ccRoot = "/sim/compact"
	ccID   = session.SessionID("cc")
	// ccSeeds is the number of unkind crashes per point; ccSeedsEnv
	// overrides it.
	ccSeeds    = 3
	ccSeedsEnv = "JSONLSTORE_COMPACT_CRASH_SEEDS"
	// ccVariantChecker is the plSnapshot variant of the checker's appends.
	ccVariantChecker = 9
)

// ccAck is what the workload had been told when a point was taken: what
// every crash of that point must show.
type ccAck struct {
	rev      uint64 // the last acknowledged revision
	inflight bool   // an append of rev+1 was under way
	// firsts are the revisions the log may start at: the old state's, and
	// during a compaction the new state's.
	firsts []uint64
	// reclaimed are files a compaction that returned reported removed:
	// they must stay removed.
	reclaimed []string
}

// ccRun is one run of the workload.
type ccRun struct {
	*crashtest.Recorder[ccAck]
	// compactions are the sync calls [from, to) of each compaction that
	// succeeded, by step: the ones the mutation test silences.
	compactions []ccSpan
}

type ccSpan struct {
	step     string
	from, to int
}

// ccWorkload runs the workload. With mutate ≥ 0, sync call number mutate
// (counting every Sync, Datasync and SyncDir from 0) does nothing and
// reports success; the workload's own checks are then relaxed to what a
// lying sync cannot change.
func ccWorkload(t testing.TB, mutate int) *ccRun {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[ccAck](mutate)
	defer rec.Stop()
	sim, faulty := rec.Sim, rec.FS
	st := crashStore(t, rec, ccRoot)
	run := &ccRun{Recorder: rec}

	ack, step := &rec.Ack, &rec.Step
	*ack = ccAck{firsts: []uint64{1}}
	capture, captureNext := false, false
	rec.Capture = func(vfs.Op, string) bool {
		if !capture && !captureNext {
			return false
		}
		captureNext = false
		return true
	}

	appendTo := func(w sessionstore.Writer, to uint64) {
		for ack.rev < to {
			ack.inflight = true
			got, err := w.Append(ctx, ack.rev, plSnapshot(ccID, ack.rev+1, 0))
			require.NoError(t, err)
			require.Equal(t, ack.rev+1, got)
			ack.rev, ack.inflight = got, false
		}
	}
	// compact runs one compaction as step name, expecting a log that
	// starts at newFirst afterwards if it succeeds.
	compact := func(name string, newFirst uint64, fn func() (maintenance.CompactReport, error)) (maintenance.CompactReport, error) {
		*step = name
		from := faulty.Calls(vfs.OpAnySync)
		old := ack.firsts
		if newFirst != old[0] {
			ack.firsts = []uint64{old[0], newFirst}
		}
		capture = true
		rep, err := fn()
		capture, captureNext = false, true
		if err == nil {
			run.compactions = append(run.compactions, ccSpan{name, from, faulty.Calls(vfs.OpAnySync)})
			ack.firsts = []uint64{newFirst}
			ack.reclaimed = append(slices.Clone(ack.reclaimed), rep.Reclaimed...)
		} else {
			ack.firsts = old
		}
		return rep, err
	}
	writerCompact := func(w sessionstore.Writer, p maintenance.CompactPolicy) func() (maintenance.CompactReport, error) {
		return func() (maintenance.CompactReport, error) { return w.(maintenance.Compactor).Compact(ctx, p) }
	}
	standalone := func(p maintenance.CompactPolicy) func() (maintenance.CompactReport, error) {
		return func() (maintenance.CompactReport, error) { return st.Compact(ctx, ccID, p, 0) }
	}
	segPath := func(first, last uint64) string { return archive.Dir(ccID) + "/" + archive.SegmentName(first, last) }

	*step = "build"
	w, err := st.Create(ctx, plSnapshot(ccID, 1, 0), sessionstore.AcquireOptions{Label: "cc"})
	require.NoError(t, err)
	ack.rev = 1
	appendTo(w, 24)
	log, err := sim.ReadFile(layout.LogPath(ccID))
	require.NoError(t, err)
	for rev, kind := range revisionKinds(log) {
		want := record.KindDelta
		if rev == 1 || slices.Contains([]uint64{0, 3, 4, 7}, rev%10) {
			want = record.KindFull
		}
		require.Equal(t, want, kind, "revision %d", rev)
	}

	rep, err := compact("C1 holder", 13, writerCompact(w, maintenance.CompactPolicy{KeepLast: 12}))
	require.NoError(t, err)
	require.Equal(t, int64(12), rep.RevisionsTrimmed)
	appendTo(w, 40)

	// C2: the rename of the new log fails. Nothing was replaced: the
	// writer is not poisoned, and the segment it published (13-29) is
	// listed but overlaps the log.
	faulty.Inject(vfs.Fault{Op: vfs.OpRename, Match: func(n string) bool { return n == layout.LogPath(ccID) }})
	_, err = compact("C2 holder, log rename fails", 30, writerCompact(w, maintenance.CompactPolicy{KeepLast: 10}))
	require.Error(t, err)
	require.NotErrorIs(t, err, sessionstore.ErrWriterFailed)
	*step = "after C2"
	appendTo(w, 50)

	rep, err = compact("C3 holder, reclaims C2's segment", 34, writerCompact(w, maintenance.CompactPolicy{KeepLast: 15}))
	require.NoError(t, err)
	require.Equal(t, []string{segPath(13, 29)}, rep.Reclaimed)
	*step = "after C3"
	appendTo(w, 55)
	require.NoError(t, w.Release(ctx))

	// C4: the manifest cannot be written: an unlisted segment (34-49).
	faulty.Inject(vfs.Fault{Op: vfs.OpOpen, Match: func(n string) bool { return strings.Contains(n, "/."+archive.ManifestFile) }})
	_, err = compact("C4 standalone, manifest fails", 50, standalone(maintenance.CompactPolicy{KeepLast: 5}))
	require.Error(t, err)
	*step = "after C4"
	w, err = st.Acquire(ctx, ccID, sessionstore.AcquireOptions{Label: "cc"})
	require.NoError(t, err)
	appendTo(w, 60)
	require.NoError(t, w.Release(ctx))

	rep, err = compact("C5 standalone, reclaims C4's file", 57, standalone(maintenance.CompactPolicy{KeepLast: 4}))
	require.NoError(t, err)
	require.Equal(t, []string{segPath(34, 49)}, rep.Reclaimed)

	// C6: the new log's fsync fails: a listed segment (57-59) overlapping
	// the log. C7 trims nothing and reclaims it.
	faulty.Inject(vfs.Fault{Op: vfs.OpSync, Match: func(n string) bool { return strings.Contains(n, "/."+LogFile+".compact-") }})
	_, err = compact("C6 standalone, new log's fsync fails", 60, standalone(maintenance.CompactPolicy{KeepLast: 1}))
	require.Error(t, err)
	rep, err = compact("C7 standalone, reclaim only", 57, standalone(maintenance.CompactPolicy{KeepLast: 10}))
	require.NoError(t, err)
	require.Equal(t, "nothing to trim", rep.Skipped)
	require.Equal(t, []string{segPath(57, 59)}, rep.Reclaimed)

	rec.Mark("end")
	return run
}

// ccChecks says how much ccCheck checks.
type ccChecks int

const (
	ccEvery       ccChecks = iota // everything; LoadRevision of every revision
	ccSample                      // everything; LoadRevision of a sample
	ccHistoryOnly                 // everything but LoadRevision
	ccStateOnly                   // the crashed state only; no LoadRevision
)

// ccStats counts what the crashed states held, to show that the crashes
// met what the checks are about.
type ccStats struct {
	states, oldState, newState, leftovers, swept, unacked atomic.Int64
}

func (s *ccStats) String() string {
	return fmt.Sprintf("states=%d old-state=%d new-state=%d with-archive-leftovers=%d with-temp-logs-swept=%d unacked-revision-survived=%d",
		s.states.Load(), s.oldState.Load(), s.newState.Load(), s.leftovers.Load(), s.swept.Load(), s.unacked.Load())
}

// ccCheck judges crashed, a state after a crash of a snapshot taken when
// ack held:
//
//   - Load returns the acknowledged revision (or the one being appended);
//     History yields 1..latest exactly once, in order, with no error, each
//     revision the very snapshot appended as it; LoadRevision returns each;
//   - the log starts where the old state or the new one starts, and the
//     files a returned compaction reclaimed are still gone;
//   - a new holder (fresh leaser: no generation remembered) acquires with
//     a higher generation, sweeps temporary logs, appends; its compaction
//     reclaims exactly the leftovers (unlisted segment files, listed
//     segments overlapping the log, temporary files), after which archive/
//     holds only the manifest and the segments it lists; every revision
//     reads back again, and again after one more crash.
//
// How much is checked is chk: LoadRevision reads every revision
// (ccEvery: for crashes with nothing pending surviving), a
// sample (ccSample) or none (ccHistoryOnly), and only on the crashed
// state (History reads them all every time); ccStateOnly also stops
// before the new holder (the mutation test's search, where a lying sync
// shows in the crashed state itself).
func ccCheck(crashed *vfs.Sim, ack ccAck, r *rand.Rand, chk ccChecks, stats *ccStats) error {
	ctx := context.Background()
	st := newStore(ccRoot, nil, crashed, newSimLeaser(crashed, ccRoot), Options{})
	defer st.Close()
	if stats != nil {
		stats.states.Add(1)
	}
	latest, maxGen, err := ccRevisions(ctx, st, ack.rev, ack.inflight, chk)
	if err != nil {
		return err
	}
	if stats != nil && latest > ack.rev {
		stats.unacked.Add(1)
	}
	first, err := ccLogFirst(crashed)
	if err != nil {
		return err
	}
	if !slices.Contains(ack.firsts, first) {
		return crashtest.Violate("old-or-new", "the log starts at revision %d; the old or the new state starts at %v", first, ack.firsts)
	}
	if stats != nil {
		if first == ack.firsts[0] {
			stats.oldState.Add(1)
		} else {
			stats.newState.Add(1)
		}
	}
	for _, p := range ack.reclaimed {
		if _, err := crashed.Lstat(p); err == nil {
			return crashtest.Violate("reclaimed", "%s was reclaimed by a compaction that returned, but is back", p)
		}
	}
	if chk == ccStateOnly {
		return nil
	}

	// What a crashed compaction left: temporary logs in the session
	// directory, and leftovers in archive/.
	var temps []string
	entries, err := crashed.ReadDir(layout.SessionDir(ccID))
	if err != nil {
		return crashtest.Violate("leftovers", "%w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+LogFile+".compact-") {
			temps = append(temps, layout.SessionDir(ccID)+"/"+e.Name())
		}
	}
	wantReclaimed, err := ccLeftovers(crashed, ccID, first)
	if err != nil {
		return err
	}
	if stats != nil && len(wantReclaimed) > 0 {
		stats.leftovers.Add(1)
	}
	if stats != nil && len(temps) > 0 {
		stats.swept.Add(1)
	}

	w, err := st.TryAcquire(ctx, ccID, sessionstore.AcquireOptions{Label: "checker"})
	if err != nil {
		return crashtest.Violate("acquire", "%w", err)
	}
	defer w.Release(ctx)
	if w.Generation() <= maxGen {
		return crashtest.Violate("generation", "new holder has generation %d, the log has %d", w.Generation(), maxGen)
	}
	for _, p := range temps {
		if !slices.Contains(w.Recovery().Swept, p) {
			return crashtest.Violate("sweep", "temporary log %s not swept (swept %v)", p, w.Recovery().Swept)
		}
	}
	next := latest + 1
	if got, err := w.Append(ctx, latest, plSnapshot(ccID, next, ccVariantChecker)); err != nil || got != next {
		return crashtest.Violate("append", "new holder's append of %d: %d, %v", next, got, err)
	}
	// KeepLast 2 keeps next-1, and its chain from its full record.
	log, err := crashed.ReadFile(layout.LogPath(ccID))
	if err != nil {
		return crashtest.Violate("recompact", "%w", err)
	}
	wantFirst := chainStart(log, next-1)
	rep, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 2})
	if err != nil {
		return crashtest.Violate("recompact", "%w", err)
	}
	if (rep.Skipped != "") != (wantFirst == first) || rep.FirstKept != wantFirst {
		return crashtest.Violate("recompact", "compaction after the crash: %+v", rep)
	}
	slices.Sort(rep.Reclaimed)
	if !slices.Equal(rep.Reclaimed, wantReclaimed) {
		return crashtest.Violate("reclaim", "reclaimed %v, the leftovers were %v", rep.Reclaimed, wantReclaimed)
	}
	if err := ccArchiveClean(crashed, ccID); err != nil {
		return err
	}
	if err := w.Release(ctx); err != nil {
		return crashtest.Violate("release", "%w", err)
	}

	// One more crash: what the recovering compaction did is durable, and
	// every revision still reads back.
	again := crashed.Crash(r)
	st2 := newStore(ccRoot, nil, again, newSimLeaser(again, ccRoot), Options{})
	defer st2.Close()
	if _, _, err := ccRevisions(ctx, st2, next, false, ccStateOnly); err != nil {
		return crashtest.Violate("second-crash", "%w", err)
	}
	if err := ccArchiveClean(again, ccID); err != nil {
		return crashtest.Violate("second-crash", "%w", err)
	}
	return nil
}

// ccRevisions checks that the store holds revisions 1..acked (or
// acked+1, when inflight) and returns the latest and the highest
// generation. Revisions the workload appended are plSnapshot variant 0,
// the checker's variant 9; each read is compared with the snapshot the
// store decodes from that payload. History reads every revision;
// LoadRevision reads every one too (ccEvery), a sample (ccSample:
// ccSampled), or none.
func ccRevisions(ctx context.Context, st *Store, acked uint64, inflight bool, chk ccChecks) (latest, maxGen uint64, err error) {
	return ccRevisionsOf(ctx, st, ccID, acked, inflight, chk)
}

// ccRevisionsOf is ccRevisions for session id.
func ccRevisionsOf(ctx context.Context, st *Store, id session.SessionID, acked uint64, inflight bool, chk ccChecks) (latest, maxGen uint64, err error) {
	rec, err := st.Load(ctx, id)
	if err != nil {
		return 0, 0, crashtest.Violate("load", "%w", err)
	}
	latest = rec.Revision
	if latest < acked || latest > acked+1 || latest == acked+1 && !inflight {
		return 0, 0, crashtest.Violate("acknowledged-revision", "latest revision %d, acknowledged %d (append in flight: %t)", latest, acked, inflight)
	}
	payload := func(rec sessionstore.Record) error {
		for _, variant := range []int{0, ccVariantChecker} {
			if reflect.DeepEqual(rec.Snapshot, ccDecoded(id, rec.Revision, variant)) {
				return nil
			}
		}
		return fmt.Errorf("revision %d is not the snapshot appended as it", rec.Revision)
	}
	var n uint64
	var prev sessionstore.Record
	for rec, err := range st.History(ctx, id) {
		if err != nil {
			return 0, 0, crashtest.Violate("history", "after revision %d: %w", n, err)
		}
		if rec.Revision != n+1 {
			return 0, 0, crashtest.Violate("history", "revision %d after %d", rec.Revision, n)
		}
		if rec.Generation < prev.Generation || rec.Time.Before(prev.Time) {
			return 0, 0, crashtest.Violate("history", "revision %d goes back in generation or time", rec.Revision)
		}
		prev = rec
		if err := payload(rec); err != nil {
			return 0, 0, crashtest.Violate("history", "%w", err)
		}
		n = rec.Revision
		maxGen = max(maxGen, rec.Generation)
	}
	if n != latest {
		return 0, 0, crashtest.Violate("history", "History ends at %d, Load says %d", n, latest)
	}
	for rev := uint64(1); rev <= latest; rev++ {
		if chk != ccEvery && (chk != ccSample || !ccSampled(rev, latest)) {
			continue
		}
		rec, err := st.LoadRevision(ctx, id, rev)
		if err != nil {
			return 0, 0, crashtest.Violate("load-revision", "%d: %w", rev, err)
		}
		if rec.Revision != rev {
			return 0, 0, crashtest.Violate("load-revision", "%d: got revision %d", rev, rec.Revision)
		}
		if err := payload(rec); err != nil {
			return 0, 0, crashtest.Violate("load-revision", "%w", err)
		}
	}
	return latest, maxGen, nil
}

// ccDecodedCache maps a plKey to the snapshot decoded from plPayload.
var ccDecodedCache sync.Map

// ccDecoded is plSnapshot(id, rev, variant) as a reader decodes it from
// the payload the store wrote (so it compares with reflect.DeepEqual,
// which is much cheaper than encoding every snapshot read again).
func ccDecoded(id session.SessionID, rev uint64, variant int) sessnap.Snapshot {
	k := plKey{id, rev, variant}
	if v, ok := ccDecodedCache.Load(k); ok {
		return v.(sessnap.Snapshot)
	}
	snap, err := sessnap.Unmarshal(plPayload(id, rev, variant))
	if err != nil {
		panic(err)
	}
	ccDecodedCache.Store(k, snap)
	return snap
}

// ccSampled selects the revisions LoadRevision reads when not every one
// is (an archived revision costs a decompression of the segments up to
// it): the edges of every segment the workload makes, where the log may
// start, and the latest.
func ccSampled(rev, latest uint64) bool {
	return rev == latest || slices.Contains([]uint64{1, 12, 13, 33, 34, 56, 57}, rev)
}

// ccLogFirst reads the revision of the log's first record.
func ccLogFirst(fsys vfs.FS) (uint64, error) { return ccLogFirstOf(fsys, ccID) }

func ccLogFirstOf(fsys vfs.FS, id session.SessionID) (uint64, error) {
	v, err := logfile.Open(fsys, id, sessionstore.DefaultMaxRecordBytes)
	if err != nil {
		return 0, crashtest.Violate("log", "%w", err)
	}
	defer v.Close()
	first, ok := logfile.FirstRev(v)
	if !ok {
		return 0, crashtest.Violate("log", "the first record is unreadable")
	}
	return first, nil
}

// ccLeftovers lists, sorted, the paths in archive/ that are neither the
// manifest nor a segment it lists below the log's first revision.
func ccLeftovers(fsys vfs.FS, id session.SessionID, logFirst uint64) ([]string, error) {
	entries, err := fsys.ReadDir(archive.Dir(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, crashtest.Violate("leftovers", "%w", err)
	}
	m, err := archive.ReadManifest(fsys, id)
	if err != nil {
		return nil, crashtest.Violate("manifest", "%w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() == archive.ManifestFile || slices.ContainsFunc(m.Segments, func(s archive.Segment) bool { return s.File == e.Name() && s.Last < logFirst }) {
			continue
		}
		out = append(out, archive.Dir(id)+"/"+e.Name())
	}
	slices.Sort(out)
	return out, nil
}

// ccArchiveClean checks that archive/ holds the manifest and exactly the
// segments it lists, which cover the revisions below the log's first.
func ccArchiveClean(fsys vfs.FS, id session.SessionID) error {
	first, err := ccLogFirstOf(fsys, id)
	if err != nil {
		return err
	}
	m, err := archive.ReadManifest(fsys, id)
	if err != nil {
		return crashtest.Violate("archive", "%w", err)
	}
	if _, err := m.Below(first); err != nil {
		return crashtest.Violate("archive", "%w", err)
	}
	entries, err := fsys.ReadDir(archive.Dir(id))
	if err != nil {
		return crashtest.Violate("archive", "%w", err)
	}
	want := []string{archive.ManifestFile}
	for _, s := range m.Segments {
		if s.Last >= first {
			return crashtest.Violate("archive", "the manifest still lists %s, which reaches into the log (first %d)", s.File, first)
		}
		want = append(want, s.File)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return crashtest.Violate("archive", "archive/ holds %v, want the manifest and its segments %v", got, want)
	}
	return nil
}

func TestCompactCrashAtEverySyncPoint(t *testing.T) {
	seeds := proctest.EnvInt(t, ccSeedsEnv, ccSeeds)
	start := time.Now()
	run := ccWorkload(t, -1)
	built := time.Since(start)
	points := run.Points()
	steps := map[string]int{}
	for _, p := range points {
		steps[p.Step]++
	}
	t.Logf("points per step: %v", steps)

	stats := &ccStats{}
	_, distinct := crashtest.Sweep(t, points, seeds, func(crashed *vfs.Sim, p crashtest.Point[ccAck], how crashtest.Crash, r *rand.Rand) error {
		chk := ccSample
		if how.Kind == crashtest.DurableOnly {
			chk = ccEvery
		}
		return ccCheck(crashed, p.Ack, r, chk, stats)
	})
	t.Logf("%d points, %d distinct crashed states (%d seeds each); workload %v, total %v",
		len(points), distinct, seeds, built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	t.Logf("what the crashed states held: %s", stats)
	if seeds >= ccSeeds {
		crashtest.Met(t, map[string]int64{
			"the old state":                    stats.oldState.Load(),
			"the new state":                    stats.newState.Load(),
			"leftovers in archive/ to reclaim": stats.leftovers.Load(),
			"a temporary log to sweep":         stats.swept.Load(),
			"an unacknowledged revision":       stats.unacked.Load(),
		})
	}
}

// TestCompactSyncMutation proves that the crash test has teeth and that
// compaction does no sync for nothing: for each sync call of the
// workload's successful compactions in turn, the workload is run again
// with that one call made a no-op that reports success, and some crash of
// a point taken after it must fail ccCheck (its crashed-state part). The
// search (crashtest.Search) tries, per mutant, the crash with nothing
// pending surviving of every later point, then unkind crashes of the
// ccMutNear points nearest the silenced call, then of all of them.
//
// The full sweep (every such sync call, up to ccMutFullSeeds seeds) runs
// when JSONLSTORE_MUTATE_SYNC=1 (make mutate-sync); a normal run checks
// the syncs of the first compaction (which creates archive/) and of the
// reclaim-only one.
func TestCompactSyncMutation(t *testing.T) {
	full := os.Getenv(mutEnv) == "1"
	base := ccWorkload(t, -1)
	var ks []int
	syncs := base.Syncs()
	for _, c := range base.compactions {
		if full || strings.HasPrefix(c.step, "C1 ") || strings.HasPrefix(c.step, "C7 ") {
			for k := c.from; k < c.to; k++ {
				if !catalogSync(syncs[k]) {
					ks = append(ks, k)
				}
			}
		}
	}
	seeds := ccMutQuickSeeds
	if full {
		seeds = ccMutFullSeeds
	} else {
		t.Logf("checking %d sync calls of compactions C1 and C7 (%s=1 checks those of every compaction)", len(ks), mutEnv)
	}
	check := func(crashed *vfs.Sim, p crashtest.Point[ccAck], _ crashtest.Crash, _ *rand.Rand) error {
		return ccCheck(crashed, p.Ack, nil, ccStateOnly, nil)
	}
	crashtest.Mutate(t, base.Recorder, ks, seeds, ccMutNear, func(t *testing.T, k int) (*crashtest.Recorder[ccAck], crashtest.Check[ccAck]) {
		return ccWorkload(t, k).Recorder, check
	})
}

const (
	// ccMutQuickSeeds and ccMutFullSeeds bound the unkind crashes tried
	// per point; ccMutNear is how many points after the silenced call get
	// them first.
	ccMutQuickSeeds = 120
	ccMutFullSeeds  = 400
	ccMutNear       = 3
)
