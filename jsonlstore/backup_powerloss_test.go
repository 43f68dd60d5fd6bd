package jsonlstore

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The power-loss test of backup and sync runs, on two stores in one
// vfs.Sim (A in src/, B in dst/), three phases: a full backup of A into
// the empty B (three sessions, two with blobs: one batch), an incremental
// one after A changed (a session appended, one compacted and appended,
// one given its first blob, a new one), and a sync after both sides changed (a session appended on both
// sides, one on B only, a new one on B). crashtest takes a point at every
// sync the phases make and crashes each many ways. On every crashed
// state, for each store and each session (once a phase returned, both
// stores hold exactly what it left):
//
//   - both stores list every session they held before the phase, and only
//     sessions they hold after it, none unreadable, each loading;
//   - a session's revisions equal those it has after the phase, up to
//     the number it has (nothing but the phase's own revisions, in
//     order), and at least as many as before the phase: nothing
//     acknowledged is lost;
//   - a session that was not there before the phase (a backup's new
//     session, a sync's copy or fork) is there whole or not at all: it is
//     published only once durable;
//   - the phase run again on the crashed state completes, what it wrote
//     verifies, and both stores then hold exactly what they hold after
//     the phase.

const (
	bpRootA = "/sim/bp-a"
	bpRootB = "/sim/bp-b"
	// bpSeeds is the number of unkind crashes per point in normal runs;
	// plSeedsEnv raises it.
	bpSeeds = 3
)

// bpPhase is a phase of the workload.
type bpPhase int

const (
	bpFull bpPhase = iota
	bpIncremental
	bpSync
	bpPhases
)

func (p bpPhase) String() string {
	return [...]string{"full backup", "incremental backup", "sync"}[p]
}

// bpState is every session's revisions (encoded) in each store.
type bpState [2]map[session.SessionID][]string

// bpAck is the phase under way, and whether it returned.
type bpAck struct {
	phase bpPhase
	done  bool
}

// bpRun is a run of the workload: its points, and the state of both
// stores before and after each phase.
type bpRun struct {
	*crashtest.Recorder[bpAck]
	before, after [bpPhases]bpState
}

// bpStores returns stores A and B on fsys (the Sim sim, or a Faulty over
// it): A in src/, B in dst/.
func bpStores(fsys, sim vfs.FS, now func() time.Time) (a, b *Store, err error) {
	var st [2]*Store
	for i, dir := range []string{"src", "dst"} {
		root := []string{bpRootA, bpRootB}[i]
		sub, err := vfs.Sub(fsys, dir)
		if err != nil {
			return nil, nil, err
		}
		plain, err := vfs.Sub(sim, dir)
		if err != nil {
			return nil, nil, err
		}
		st[i] = newStore(root, nil, sub, newSimLeaser(plain, root), Options{BlobThreshold: 1024, Now: now})
	}
	return st[0], st[1], nil
}

// bpBackup backs a up into b as Backup does, and requires it to succeed
// and verify.
func bpBackup(ctx context.Context, a, b *Store) error {
	var rep maintenance.BackupReport
	if _, err := a.offline().Backup(ctx, b.offline(), nil, a.forSessions, maintenance.BackupOptions{}, &rep); err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("backup: %+v", rep)
	}
	return nil
}

// bpSyncStores syncs a and b as Sync does, and verifies what it wrote.
func bpSyncStores(ctx context.Context, a, b *Store) error {
	var rep maintenance.SyncReport
	toA, toB, err := a.offline().Sync(ctx, b.offline(), maintenance.SyncOptions{}, &rep)
	if err != nil {
		return err
	}
	if len(rep.Skipped)+len(rep.Unreadable) > 0 {
		return fmt.Errorf("sync: %+v", rep)
	}
	for i, side := range []struct {
		st  *Store
		ids []session.SessionID
	}{{a, toA}, {b, toB}} {
		if len(side.ids) == 0 {
			continue
		}
		v, err := side.st.Verify(ctx, side.ids...)
		if err != nil {
			return err
		}
		if !v.OK() {
			return fmt.Errorf("sync: side %d does not verify: %+v", i, v)
		}
	}
	return nil
}

func bpWorkload(t testing.TB, mutate int) *bpRun {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[bpAck](mutate)
	defer rec.Stop()
	capturing := false
	rec.Capture = func(vfs.Op, string) bool { return capturing }
	for _, dir := range []string{"src", "dst"} {
		require.NoError(t, rec.FS.Mkdir(dir, 0o700))
		sub, err := vfs.Sub(rec.FS, dir)
		require.NoError(t, err)
		withCatalogDirs(t, sub, true)
	}
	require.NoError(t, rec.FS.SyncDir("."))
	a, b, err := bpStores(rec.FS, rec.Sim, crashtest.Clock(sessiontest.Epoch))
	require.NoError(t, err)
	defer a.Close()
	defer b.Close()
	run := &bpRun{Recorder: rec}
	phase := func(p bpPhase, prepare func(), do func() error) {
		rec.Step = "before the " + p.String()
		prepare()
		run.before[p] = bpStateOf(t, a, b)
		rec.Ack, rec.Step = bpAck{phase: p}, p.String()
		capturing = true
		require.NoError(t, do())
		capturing = false
		run.after[p] = bpStateOf(t, a, b)
		rec.Ack.done = true
		rec.Mark(p.String() + " returned")
	}
	phase(bpFull, func() {
		bkGrow(t, a, "ap", 3, 0)
		bkGrow(t, a, "cp", 5, 0)
		bkGrow(t, a, "sm", 1, 0) // no blob yet
	}, func() error { return bpBackup(ctx, a, b) })
	phase(bpIncremental, func() {
		bkGrow(t, a, "ap", 2, 0)
		_, err := a.Compact(ctx, "cp", maintenance.CompactPolicy{KeepLast: 2}, 0)
		require.NoError(t, err)
		bkGrow(t, a, "cp", 1, 0)
		bkGrow(t, a, "nw", 3, 0)
		bkGrow(t, a, "sm", 1, 0) // its first blob: blobs/ made in B's copy
	}, func() error { return bpBackup(ctx, a, b) })
	phase(bpSync, func() {
		bkGrow(t, a, "ap", 1, 1)
		bkGrow(t, b, "ap", 2, 2)
		bkGrow(t, b, "cp", 1, 2)
		bkGrow(t, b, "bn", 2, 2)
	}, func() error { return bpSyncStores(ctx, a, b) })
	// The sync made forks and copies on both sides.
	require.Greater(t, len(run.after[bpSync][0]), len(run.before[bpSync][0]))
	require.Greater(t, len(run.after[bpSync][1]), len(run.before[bpSync][1]))
	return run
}

// bpStateOf reads every session of both stores.
func bpStateOf(t testing.TB, a, b *Store) bpState {
	t.Helper()
	var out bpState
	for i, st := range []*Store{a, b} {
		m, err := bpSessions(st)
		require.NoError(t, err)
		out[i] = m
	}
	return out
}

// bpSessions lists st and reads every revision of each session.
func bpSessions(st *Store) (map[session.SessionID][]string, error) {
	ctx := context.Background()
	out := map[session.SessionID][]string{}
	cursor := ""
	for {
		page, err := st.List(ctx, summary.Query{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		if len(page.Unreadable) > 0 {
			return nil, fmt.Errorf("unreadable: %+v", page.Unreadable)
		}
		for _, sum := range page.Items {
			var revs []string
			for rec, err := range st.History(ctx, sum.ID) {
				if err != nil {
					return nil, fmt.Errorf("%s: %w", sum.ID, err)
				}
				if rec.Revision != uint64(len(revs)+1) {
					return nil, fmt.Errorf("%s: revision %d where %d was due", sum.ID, rec.Revision, len(revs)+1)
				}
				b, err := adapter.EncodeSnapshot(rec.ID, rec.Snapshot, 0)
				if err != nil {
					return nil, err
				}
				revs = append(revs, string(b))
			}
			if _, err := st.Load(ctx, sum.ID); err != nil {
				return nil, fmt.Errorf("%s: %w", sum.ID, err)
			}
			out[sum.ID] = revs
		}
		if cursor = page.Next; cursor == "" {
			return out, nil
		}
	}
}

// check judges one crashed state.
func (run *bpRun) check(crashed *vfs.Sim, p crashtest.Point[bpAck], _ crashtest.Crash, _ *rand.Rand) error {
	ctx := context.Background()
	ph := p.Ack.phase
	before, after := run.before[ph], run.after[ph]
	a, b, err := bpStores(crashed, crashed, time.Now)
	if err != nil {
		return crashtest.Violate("open", "%v", err)
	}
	defer a.Close()
	defer b.Close()
	for i, st := range []*Store{a, b} {
		side := "AB"[i : i+1]
		got, err := bpSessions(st)
		if err != nil {
			return crashtest.Violate("readable", "%s: %v", side, err)
		}
		if p.Ack.done && !maps.EqualFunc(got, after[i], slices.Equal[[]string]) {
			return crashtest.Violate("acknowledged", "%s: not what the %s left", side, ph)
		}
		for _, id := range slices.Sorted(maps.Keys(before[i])) {
			if _, ok := got[id]; !ok {
				return crashtest.Violate("kept", "%s: %s is gone", side, id)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(got)) {
			revs, want := got[id], after[i][id]
			switch {
			case want == nil:
				return crashtest.Violate("only known", "%s lists %s", side, id)
			case len(revs) > len(want) || !slices.Equal(revs, want[:len(revs)]):
				return crashtest.Violate("revisions", "%s: %s's %d revisions are not the first of its %d", side, id, len(revs), len(want))
			case len(revs) < len(before[i][id]):
				return crashtest.Violate("kept", "%s: %s has %d revisions, %d before", side, id, len(revs), len(before[i][id]))
			case before[i][id] == nil && len(revs) != len(want):
				return crashtest.Violate("whole", "%s: new session %s has %d of its %d revisions", side, id, len(revs), len(want))
			}
		}
	}
	// The phase again completes, and leaves both stores as the phase did.
	if ph == bpSync {
		err = bpSyncStores(ctx, a, b)
	} else {
		err = bpBackup(ctx, a, b)
	}
	if err != nil {
		return crashtest.Violate("rerun", "%v", err)
	}
	for i, st := range []*Store{a, b} {
		got, err := bpSessions(st)
		if err != nil {
			return crashtest.Violate("rerun", "%v", err)
		}
		if !maps.EqualFunc(got, after[i], slices.Equal[[]string]) {
			return crashtest.Violate("rerun", "%s after the rerun: %v, want %v", "AB"[i:i+1], slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(after[i])))
		}
		v, err := st.Verify(ctx)
		if err != nil || !v.OK() {
			return crashtest.Violate("rerun", "verify: %v %+v", err, v)
		}
	}
	return nil
}

// TestBackupPowerLoss sweeps the crashed states of bpWorkload: a power
// cut at every sync point of a full backup, an incremental one and a
// sync. Normal runs crash each point bpSeeds unkind ways besides the
// durable-only and all-survive ones; JSONLSTORE_POWERLOSS_SEEDS sets more.
func TestBackupPowerLoss(t *testing.T) {
	seeds := proctest.EnvInt(t, plSeedsEnv, bpSeeds)
	start := time.Now()
	run := bpWorkload(t, -1)
	points := run.Points()
	perPhase := map[string]int{}
	for _, p := range points {
		perPhase[p.Step]++
	}
	require.Positive(t, perPhase[bpFull.String()])
	require.Positive(t, perPhase[bpIncremental.String()])
	require.Positive(t, perPhase[bpSync.String()])
	states, distinct := crashtest.Sweep(t, points, seeds, run.check)
	t.Logf("%d points %v, %d crashed states (%d seeds each), %d distinct; %v",
		len(points), perPhase, states, seeds, distinct, time.Since(start).Round(time.Millisecond))
}

// TestBackupPowerLossSyncs silences each sync of the phases, one at a
// time, and requires some crashed state after it to fail the check: no
// sync of theirs is for nothing, and the checker has teeth (the catalog's
// syncs and a fork's settings are proved by their own tests, and a root's
// sync that a later one of the same phase covers is not tried). In
// particular, without the full backup's one SyncAll a session is
// published before it is durable, and a crash shows it torn or empty.
func TestBackupPowerLossSyncs(t *testing.T) {
	base := bpWorkload(t, -1)
	syncs := base.Syncs()
	var ks []int
	for k, s := range syncs {
		switch {
		case !slices.ContainsFunc([]bpPhase{bpFull, bpIncremental, bpSync}, func(p bpPhase) bool { return strings.HasPrefix(s, p.String()+": ") }):
			// the workload's own set-up
		case strings.Contains(s, "/"+CatalogDir):
			// the catalog's: proved by its crash test (catalogSync)
		case strings.HasSuffix(s, "/"+SettingsFile):
			// a new session's settings (a sync's fork): proved by
			// TestSyncMutation ("create: settings")
		case strings.HasSuffix(s, " syncdir src") || strings.HasSuffix(s, " syncdir dst"):
			// A root's sync after a publication is needed where no later
			// one of the phase covers it.
			if !slices.Contains(syncs[k+1:], s) {
				ks = append(ks, k)
			}
		default:
			ks = append(ks, k)
		}
	}
	require.NotEmpty(t, ks)
	crashtest.Mutate(t, base.Recorder, ks, 100, 3, func(t *testing.T, k int) (*crashtest.Recorder[bpAck], crashtest.Check[bpAck]) {
		run := bpWorkload(t, k)
		return run.Recorder, run.check
	})
}
