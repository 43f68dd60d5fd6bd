package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const (
	// procModeSyncKill: sync the store at procDirEnv (A) with the one at
	// syncKillBEnv (B) and die of SIGKILL at the backupKillAtEnv-th change
	// the sync makes to side syncKillSideEnv ("a" or "b"; 0: never);
	// print "done ops=N" when it finishes.
	procModeSyncKill = "sync-kill"
	syncKillBEnv     = "JSONLSTORE_SYNC_KILL_B"
	syncKillSideEnv  = "JSONLSTORE_SYNC_KILL_SIDE"
)

// TestSyncKilled kills a child process that syncs two stores at changes
// it makes to one side in turn (then to the other): every
// syncKillStride-th, from the first, and the last a whole run makes there
// (all with JSONLSTORE_SYNC_KILL_STRIDE=1). The stores share sessions (B
// was a `cp -r` of A), then each was changed apart: sessions appended on
// both sides (forks to make), on one side only, and a new session on
// each. After each kill, before anything recovers: each store lists only
// sessions that read whole, each revision one of the revisions either
// side had; a fork is there whole or not at all. Then a sync in the
// parent completes: both stores verify, each diverged session has its two
// forks, and a further sync changes nothing.
func TestSyncKilled(t *testing.T) {
	ctx := t.Context()
	a, b := syncFixture(t, 6, 2, 2)
	known := map[string]bool{}
	branches := map[session.SessionID][]string{}
	for _, st := range []*Store{a, b} {
		ids, err := st.sessionIDs()
		require.NoError(t, err)
		for _, id := range ids {
			titles := bkTitles(t, st, id)
			for _, title := range titles {
				known[title] = true
			}
			if st == b {
				branches[id+"@b"] = titles
			} else {
				branches[id+"@a"] = titles
			}
		}
	}
	baseA, baseB := a.Dir(), b.Dir() // idle from here on: copied afresh for each run

	run := func(dirA, dirB, side string, at int) (ops int, killed bool) {
		env := []string{procDirEnv + "=" + dirA, syncKillBEnv + "=" + dirB, syncKillSideEnv + "=" + side, backupKillAtEnv + "=" + strconv.Itoa(at)}
		c := proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: procModeSyncKill, Env: env})
		err := c.Wait(t)
		if err == nil {
			l, ok := c.TryNext()
			require.True(t, ok, "the child finished without saying so")
			return int(proctest.Uint(t, proctest.Fields(t, l, "done"), "ops")), false
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the child must die or finish (stderr: %s)", c.Stderr())
		ws, ok := ee.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "died of %v: %s", err, c.Stderr())
		return 0, true
	}
	fresh := func() (string, string) {
		d := t.TempDir()
		dirA, dirB := filepath.Join(d, "a"), filepath.Join(d, "b")
		require.NoError(t, os.CopyFS(dirA, os.DirFS(baseA)))
		require.NoError(t, os.CopyFS(dirB, os.DirFS(baseB)))
		return dirA, dirB
	}
	readable := func(name, dir string) {
		st, err := Open(dir, Options{})
		require.NoError(t, err, name)
		defer func() { require.NoError(t, st.Close()) }()
		page, err := st.List(ctx, summary.Query{})
		require.NoError(t, err, name)
		require.Empty(t, page.Unreadable, name)
		for _, sum := range page.Items {
			titles := bkTitles(t, st, sum.ID)
			for _, title := range titles {
				require.True(t, known[title], "%s: %s holds %q, which neither side had", name, sum.ID, title)
			}
			if rec, err := st.Load(ctx, sum.ID); err == nil && rec.Snapshot.Labels[maintenance.SyncDivergedFrom] != "" {
				from := session.SessionID(rec.Snapshot.Labels[maintenance.SyncDivergedFrom])
				whole := slicesEqual(titles, branches[from+"@a"]) || slicesEqual(titles, branches[from+"@b"])
				require.True(t, whole, "%s: fork %s is not a whole branch", name, sum.ID)
			}
		}
	}
	stride := proctest.EnvInt(t, syncKillStrideEnv, syncKillStride)
	for _, side := range []string{"a", "b"} {
		dirA, dirB := fresh()
		total, _ := run(dirA, dirB, side, 0)
		t.Logf("a whole sync makes %d changes to side %s", total, side)
		require.Greater(t, total, 5)
		for k := 1; ; k = syncKillNext(k, stride, total) {
			name := fmt.Sprintf("kill at change %d of side %s", k, side)
			dirA, dirB := fresh()
			if ops, killed := run(dirA, dirB, side, k); !killed {
				require.Equal(t, total, ops, name)
				require.Greater(t, k, total, name)
				break
			}
			readable(name, dirA)
			readable(name, dirB)
			sa, err := Open(dirA, Options{})
			require.NoError(t, err, name)
			rep, err := sa.Sync(ctx, dirB, maintenance.SyncOptions{})
			require.NoError(t, err, name)
			require.True(t, rep.OK(), "%s: %+v", name, rep)
			again, err := sa.Sync(ctx, dirB, maintenance.SyncOptions{})
			require.NoError(t, err, name)
			require.False(t, again.Changed(), "%s: %+v", name, again)
			sb, err := Open(dirB, Options{})
			require.NoError(t, err, name)
			for _, st := range []*Store{sa, sb} {
				v, err := st.Verify(ctx)
				require.NoError(t, err, name)
				require.True(t, v.OK(), "%s: %+v", name, v)
			}
			for i := range 2 { // the diverged sessions: each side has the other's branch
				id := session.SessionID(fmt.Sprintf("s%04d", i))
				require.True(t, hasBranch(t, sa, branches[id+"@b"]), "%s: B's %s in A", name, id)
				require.True(t, hasBranch(t, sb, branches[id+"@a"]), "%s: A's %s in B", name, id)
			}
			require.NoError(t, sa.Close())
			require.NoError(t, sb.Close())
		}
	}
}

func slicesEqual(a, b []string) bool {
	return len(a) == len(b) && fmt.Sprint(a) == fmt.Sprint(b)
}

// hasBranch reports whether some session of st holds exactly titles.
func hasBranch(t *testing.T, st *Store, titles []string) bool {
	ids, err := st.sessionIDs()
	require.NoError(t, err)
	for _, id := range ids {
		if slicesEqual(bkTitles(t, st, id), titles) {
			return true
		}
	}
	return false
}

// syncKillChild is procModeSyncKill.
func syncKillChild(ctx context.Context) error {
	at, err := strconv.Atoi(os.Getenv(backupKillAtEnv))
	if err != nil {
		return err
	}
	a, err := Open(os.Getenv(procDirEnv), Options{BlobThreshold: 1024})
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := Open(os.Getenv(syncKillBEnv), Options{BlobThreshold: 1024})
	if err != nil {
		return err
	}
	defer b.Close()
	killed := a
	if os.Getenv(syncKillSideEnv) == "b" {
		killed = b
	}
	cfs := &countingFS{FS: killed.fs, at: at}
	swapFS(killed, cfs)
	var rep maintenance.SyncReport
	if _, _, err := a.offline().Sync(ctx, b.offline(), maintenance.SyncOptions{}, &rep); err != nil {
		return err
	}
	if len(rep.Skipped)+len(rep.Unreadable) > 0 {
		return fmt.Errorf("not everything synced: %+v", rep)
	}
	fmt.Printf("done ops=%d\n", cfs.count())
	return nil
}

// Normal runs kill the sync at every syncKillStride-th change (from the
// first) and at the last one; JSONLSTORE_SYNC_KILL_STRIDE=1 kills it at
// every change. The power-loss test (TestBackupPowerLoss) covers every
// sync point of a sync, and the states between them, on every run.
const (
	syncKillStride    = 4
	syncKillStrideEnv = "JSONLSTORE_SYNC_KILL_STRIDE"
)

// syncKillNext is the change to kill at after k: k+stride, the last
// change (total) if that skips it, then one past it (a run that is not
// killed).
func syncKillNext(k, stride, total int) int {
	switch {
	case k >= total:
		return total + 1
	case k+stride > total:
		return total
	}
	return k + stride
}
