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
	// procModeBackupKill: back up the store at procDirEnv into the one at
	// backupKillDestEnv and die of SIGKILL at the backupKillAtEnv-th
	// change the backup makes to the destination (0: never); print
	// "done ops=N" when it finishes.
	procModeBackupKill = "backup-kill"
	backupKillDestEnv  = "JSONLSTORE_BACKUP_KILL_DEST"
	backupKillAtEnv    = "JSONLSTORE_BACKUP_KILL_AT"
)

// TestBackupKilled kills a child process that backs a store up into an
// earlier backup of it, at every change the backup makes to the
// destination in turn (each creation, write, sync, rename and removal:
// the child counts them and dies of SIGKILL right after the k-th), for k
// from 1 to the number a whole run makes. The source holds a session
// appended since the earlier backup, one compacted and appended since
// (with an archive), and a new one, all with blobs. After each kill,
// before anything recovers: the destination lists only those sessions
// (a half-built one under a temporary name is never one of them), and
// every session it lists reads, each revision equal to the source's. Then
// a backup in the parent completes: it verifies, and the destination
// holds every revision of the source.
func TestBackupKilled(t *testing.T) {
	ctx := t.Context()
	st := openTestStoreWith(t, Options{BlobThreshold: 1024})
	bkGrow(t, st, "ap", 8, 0)
	bkGrow(t, st, "cp", 12, 0)
	base := filepath.Join(t.TempDir(), "base")
	_, err := st.Backup(ctx, base)
	require.NoError(t, err)
	bkGrow(t, st, "ap", 4, 0)
	_, err = st.Compact(ctx, "cp", maintenance.CompactPolicy{KeepLast: 3}, 0)
	require.NoError(t, err)
	bkGrow(t, st, "cp", 2, 0)
	bkGrow(t, st, "nw", 6, 0)
	ids := []session.SessionID{"ap", "cp", "nw"}
	want := map[session.SessionID][]string{}
	for _, id := range ids {
		want[id] = bkRevisions(t, st, id)
	}

	run := func(dest string, at int) (ops int, killed bool) {
		env := []string{procDirEnv + "=" + st.Dir(), backupKillDestEnv + "=" + dest, backupKillAtEnv + "=" + strconv.Itoa(at)}
		c := proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: procModeBackupKill, Env: env})
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
	fresh := func(k int) string {
		dest := filepath.Join(t.TempDir(), fmt.Sprintf("dest-%d", k))
		require.NoError(t, os.CopyFS(dest, os.DirFS(base)))
		return dest
	}

	total, _ := run(fresh(0), 0)
	t.Logf("a whole backup makes %d changes to the destination", total)
	require.Greater(t, total, 10)
	for k := 1; ; k++ {
		name := fmt.Sprintf("kill at change %d", k)
		dest := fresh(k)
		if ops, killed := run(dest, k); !killed {
			require.Equal(t, k-1, ops, name)
			break
		}
		dst, err := Open(dest, Options{})
		require.NoError(t, err, name)
		page, err := dst.List(ctx, summary.Query{})
		require.NoError(t, err, name)
		require.Empty(t, page.Unreadable, name)
		listed := 0
		for _, sum := range page.Items {
			require.Contains(t, want, sum.ID, "%s: the destination lists %s", name, sum.ID)
			listed++
			got := bkRevisions(t, dst, sum.ID)
			require.NotEmpty(t, got, name)
			require.Equal(t, want[sum.ID][:len(got)], got, "%s: session %s", name, sum.ID)
		}
		require.GreaterOrEqual(t, listed, 2, "%s: the earlier backup's sessions are still there", name)
		rep, err := st.Backup(ctx, dest)
		require.NoError(t, err, name)
		require.True(t, rep.OK(), "%s: %+v", name, rep)
		v, err := dst.Verify(ctx)
		require.NoError(t, err, name)
		require.True(t, v.OK(), "%s: %+v", name, v)
		for _, id := range ids {
			require.Equal(t, want[id], bkRevisions(t, dst, id), "%s: session %s after the rerun", name, id)
		}
		require.NoError(t, dst.Close())
	}
}

// backupKillChild is procModeBackupKill.
func backupKillChild(ctx context.Context) error {
	at, err := strconv.Atoi(os.Getenv(backupKillAtEnv))
	if err != nil {
		return err
	}
	st, err := Open(os.Getenv(procDirEnv), Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	dst, err := Open(os.Getenv(backupKillDestEnv), Options{})
	if err != nil {
		return err
	}
	defer dst.Close()
	cfs := &countingFS{FS: dst.fs, at: at}
	swapFS(dst, cfs)
	var rep maintenance.BackupReport
	if _, err := st.offline().Backup(ctx, dst.offline(), nil, st.forSessions, maintenance.BackupOptions{}, &rep); err != nil {
		return err
	}
	if len(rep.Skipped)+len(rep.Unreadable) > 0 {
		return fmt.Errorf("not everything copied: %+v", rep)
	}
	fmt.Printf("done ops=%d\n", cfs.count())
	return nil
}

// WriteAt writes p in two halves, each a change: a kill after the first
// leaves half a write, as a kill in the middle of one would.
func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	h := len(p) / 2
	n, err := f.File.WriteAt(p[:h], off)
	if n > 0 {
		f.c.changed()
	}
	if err != nil {
		return n, err
	}
	m, err := f.File.WriteAt(p[h:], off+int64(h))
	if m > 0 {
		f.c.changed()
	}
	return n + m, err
}

func (f *countingFile) Truncate(size int64) error { return f.c.after(f.File.Truncate(size)) }
