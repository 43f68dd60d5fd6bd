package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// TestCreateKilledAfterPublish kills the creator of a session right after
// its publishing rename, and right after the root's sync that follows,
// for both ways of creating one: CreateHistory (then Release) and
// CreateHistoryReleased, which records the lease released before
// publishing. Either way the session is whole (every revision as the
// generator wrote it), listed, and taken over by the next holder with
// generation 2 and nothing to repair; it lacks only its caches
// (summary.json). What the kill leaves of the lease differs: a held
// record with its lock let go, a stale lease, after CreateHistory; the
// released record, a free lease, after CreateHistoryReleased, which had
// nothing left to write under it.
func TestCreateKilledAfterPublish(t *testing.T) {
	seed := procSeed(t)
	for _, tc := range []struct {
		name     string
		released bool
		at       string
		want     summary.LeaseState
	}{
		{"released/after-rename", true, createKillRename, summary.LeaseFree},
		{"released/after-root-sync", true, createKillRoot, summary.LeaseFree},
		{"held/after-rename", false, createKillRename, summary.LeaseStale},
		{"held/after-root-sync", false, createKillRoot, summary.LeaseStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			id := session.SessionID("killed-" + strings.ReplaceAll(tc.name, "/", "-"))
			env := append(procEnv(dir, id, seed), createKillAtEnv+"="+tc.at, createKillReleasedEnv+"="+strconv.FormatBool(tc.released))
			c := proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: procModeCreateKilled, Env: env})
			err := c.Wait(t)
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the creator must die, not return (stderr: %s)", c.Stderr())
			ws, ok := ee.Sys().(syscall.WaitStatus)
			require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "died of %v", err)

			st, err := Open(dir, Options{})
			require.NoError(t, err)
			verifyAtCleanup(t, st)
			t.Cleanup(func() { st.Close() })
			res, err := procCheckHistory(ctx, st, id, seed, 0)
			require.NoError(t, err)
			require.Equal(t, uint64(createKillRevs), res.Latest)
			require.Equal(t, uint64(1), res.Generation)
			_, err = os.Lstat(filepath.Join(dir, layout.SessionDir(id), SummaryFile))
			require.ErrorIs(t, err, fs.ErrNotExist, "killed before the summary was written")

			ls, err := st.Lease(ctx, id)
			require.NoError(t, err)
			require.Equal(t, tc.want, ls.State)
			require.Equal(t, uint64(1), ls.Generation)
			page, err := st.List(ctx, summary.Query{})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			require.Equal(t, id, page.Items[0].ID)
			require.Equal(t, uint64(createKillRevs), page.Items[0].Revision)
			require.Equal(t, tc.want, page.Items[0].Lease.State)

			w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
			require.NoError(t, err)
			rep := w.Recovery()
			require.Equal(t, uint64(2), rep.Generation)
			require.Equal(t, tc.want, rep.Previous.State)
			require.Equal(t, uint64(1), rep.Previous.Generation)
			require.False(t, rep.Repaired(), "%+v", rep)
			snap, err := procSnapshot(id, seed, createKillRevs+1)
			require.NoError(t, err)
			_, err = w.Append(ctx, createKillRevs, snap)
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
			res, err = procCheckHistory(ctx, st, id, seed, 0)
			require.NoError(t, err)
			require.Equal(t, uint64(createKillRevs+1), res.Latest)
		})
	}
}

const (
	// createKillAtEnv says where the helper dies: createKillRename or
	// createKillRoot.
	createKillAtEnv  = "JSONLSTORE_PROC_KILL_AT"
	createKillRename = "rename"
	createKillRoot   = "root-sync"
	// createKillReleasedEnv=true makes the helper create with
	// CreateHistoryReleased.
	createKillReleasedEnv = "JSONLSTORE_PROC_RELEASED"
	// createKillRevs is the length of the history the helper creates
	// (procSnapshot's revisions: large ones go out of line, as blobs).
	createKillRevs = 6
)

// createKilledChild is the helper of TestCreateKilledAfterPublish: it
// creates session ID of createKillRevs revisions on a file system that
// kills the process where createKillAtEnv says.
func createKilledChild(ctx context.Context) error {
	id := session.SessionID(os.Getenv(procIDEnv))
	seed, err := strconv.ParseUint(os.Getenv(procSeedEnv), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", procSeedEnv, err)
	}
	released, err := strconv.ParseBool(os.Getenv(createKillReleasedEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", createKillReleasedEnv, err)
	}
	st, err := Open(os.Getenv(procDirEnv), Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	swapFS(st, &killingFS{FS: st.fs, at: os.Getenv(createKillAtEnv)})
	var snaps iter.Seq2[sessnap.Snapshot, error] = func(yield func(sessnap.Snapshot, error) bool) {
		for rev := uint64(1); rev <= createKillRevs; rev++ {
			if !yield(procSnapshot(id, seed, rev)) {
				return
			}
		}
	}
	opts := sessionstore.AcquireOptions{Label: "creator"}
	if released {
		_, err = st.CreateHistoryReleased(ctx, snaps, opts)
	} else {
		var w sessionstore.Writer
		if w, err = st.CreateHistory(ctx, snaps, opts); err == nil {
			err = w.Release(ctx)
		}
	}
	if err == nil {
		err = errors.New("created, and not killed")
	}
	return err
}

// killingFS kills the process right after a session's publishing rename
// (at createKillRename) or right after the root's sync that follows it
// (createKillRoot).
type killingFS struct {
	vfs.FS
	at        string
	published bool
}

func (k *killingFS) RenameNoReplace(oldname, newname string) error {
	err := k.FS.RenameNoReplace(oldname, newname)
	if err == nil && strings.HasPrefix(oldname, layout.TmpDirPrefix) {
		k.published = true
		if k.at == createKillRename {
			killSelf()
		}
	}
	return err
}

func (k *killingFS) SyncDir(name string) error {
	err := k.FS.SyncDir(name)
	if err == nil && name == "." && k.published && k.at == createKillRoot {
		killSelf()
	}
	return err
}

// killSelf dies of SIGKILL, as a creator killed at that moment would.
func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
