package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

const (
	// procModeRetireKill: retire (or restore, retireKillOpEnv) session ID
	// and die of SIGKILL at the retireKillAtEnv-th change it makes to the
	// file system (0: never); print "done ops=N" when it finishes.
	procModeRetireKill = "retire-kill"
	retireKillOpEnv    = "JSONLSTORE_RETIRE_KILL_OP"
	retireKillAtEnv    = "JSONLSTORE_RETIRE_KILL_AT"
)

// TestRetireKilled kills a child process that retires a session, and one
// that restores it, at every change either makes to the file system in
// turn (each write, sync, creation, rename and removal: the child counts
// them and dies of SIGKILL right after the k-th), for k from 1 to the
// number a whole run makes. The session has an archive, blobs and a
// compacted log. After each kill, before anyone recovers anything:
//
//   - the session is live or retired (or both): never neither;
//   - a live copy is byte for byte the original;
//   - a retired copy reads whole (every member matches its checksum);
//   - both at once only ever between the publication of the new copy
//     and the removal of the old one.
//
// Then the same operation, run again in the parent, finishes: the
// session ends in the state it was going to (retired, or live), and a
// restore gives back the original bytes. Verify finds the store sound at
// the end (verifyAtCleanup).
func TestRetireKilled(t *testing.T) {
	ctx := t.Context()
	st := openTestStoreWith(t, Options{BlobThreshold: 4096})
	dir := st.Dir()
	const id = session.SessionID("rk")
	makeRetireSession(t, st, id, 30, map[string]string{"team": "tools"}, 5000) // every message a blob
	_, err := st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: 3}, 0)
	require.NoError(t, err)
	orig := sessionFiles(t, dir, id)
	_, ok := orig["archive/manifest.json"]
	require.True(t, ok, "the session has an archive")
	_, ok = orig["blobs/"]
	require.True(t, ok, "the session has blobs")

	run := func(op string, at int) (ops int, killed bool) {
		env := []string{procDirEnv + "=" + dir, procIDEnv + "=" + string(id), retireKillOpEnv + "=" + op, retireKillAtEnv + "=" + strconv.Itoa(at)}
		c := proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: procModeRetireKill, Env: env})
		err := c.Wait(t)
		if err == nil {
			l, ok := c.TryNext()
			require.True(t, ok, "the child finished without saying so")
			done := proctest.Fields(t, l, "done")
			return int(proctest.Uint(t, done, "ops")), false
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the child must die or finish (stderr: %s)", c.Stderr())
		ws, ok := ee.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "died of %v: %s", err, c.Stderr())
		return 0, true
	}
	state := func() (live, retired bool) {
		_, err := os.Lstat(filepath.Join(dir, string(id)))
		live = err == nil
		_, err = os.Lstat(filepath.Join(dir, filepath.FromSlash(retire.PackPath(id))))
		retired = err == nil
		return live, retired
	}

	// The number of changes of a whole retire and a whole restore.
	retireOps, _ := run(retire.OpRetire, 0)
	restoreOps, _ := run(retire.OpRestore, 0)
	require.Equal(t, orig, sessionFiles(t, dir, id))
	t.Logf("a retire makes %d changes, a restore %d", retireOps, restoreOps)
	require.Greater(t, retireOps, 5)
	require.Greater(t, restoreOps, 5)

	var counts struct{ live, retired, both int }
	for _, op := range []string{retire.OpRetire, retire.OpRestore} {
		for k := 1; ; k++ {
			name := fmt.Sprintf("%s at change %d", op, k)
			// The starting state.
			if op == retire.OpRestore {
				_, err := st.Retire(ctx, maintenance.RetireOptions{IDs: []session.SessionID{id}})
				require.NoError(t, err, name)
			}
			if ops, killed := run(op, k); !killed {
				// Past the last change (fewer than the first runs made:
				// the retired area and its journal exist now).
				require.Equal(t, k-1, ops, name)
				if op == retire.OpRetire {
					_, err := st.Restore(ctx, id)
					require.NoError(t, err)
				}
				break
			}
			live, retired := state()
			require.True(t, live || retired, "%s: the session is neither live nor retired", name)
			if live {
				require.Equal(t, orig, sessionFiles(t, dir, id), "%s: the live copy", name)
			}
			if retired {
				bad, err := st.VerifyRetired(ctx, id)
				require.NoError(t, err)
				require.Empty(t, bad, "%s: the retired copy", name)
			}
			switch {
			case live && retired:
				counts.both++
			case live:
				counts.live++
			default:
				counts.retired++
			}
			// The same operation again finishes what the killed one began.
			if op == retire.OpRetire {
				if live {
					rep, err := st.Retire(ctx, maintenance.RetireOptions{IDs: []session.SessionID{id}})
					require.NoError(t, err, name)
					require.Len(t, rep.Retired, 1, "%s: %+v", name, rep.Skipped)
				}
				live, retired = state()
				require.True(t, !live && retired, name)
			}
			if _, err := st.Restore(ctx, id); err != nil && !errors.Is(err, ErrNotRetired) {
				require.NoError(t, err, name)
			}
			live, retired = state()
			require.True(t, live && !retired, name)
			require.Equal(t, orig, sessionFiles(t, dir, id), "%s: restored byte for byte", name)
			for _, err := range retire.Events(st.fs) {
				require.NoError(t, err, "%s: the journal", name)
			}
		}
	}
	t.Logf("after the kills: %d live, %d retired, %d both", counts.live, counts.retired, counts.both)
	require.Positive(t, counts.live)
	require.Positive(t, counts.retired)
	require.Positive(t, counts.both)
}

// retireKillChild is procModeRetireKill.
func retireKillChild(ctx context.Context) error {
	id := session.SessionID(os.Getenv(procIDEnv))
	at, err := strconv.Atoi(os.Getenv(retireKillAtEnv))
	if err != nil {
		return err
	}
	st, err := Open(os.Getenv(procDirEnv), Options{BlobThreshold: 4096})
	if err != nil {
		return err
	}
	defer st.Close()
	cfs := &countingFS{FS: st.fs, at: at}
	swapFS(st, cfs)
	switch op := os.Getenv(retireKillOpEnv); op {
	case retire.OpRetire:
		rep, err := st.Retire(ctx, maintenance.RetireOptions{IDs: []session.SessionID{id}})
		if err != nil {
			return err
		}
		if len(rep.Retired) != 1 {
			return fmt.Errorf("not retired: %+v", rep.Skipped)
		}
	case retire.OpRestore:
		if _, err := st.Restore(ctx, id); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: %q", retireKillOpEnv, op)
	}
	fmt.Printf("done ops=%d\n", cfs.count())
	return nil
}

// countingFS counts the changes made through it (creations, renames,
// removals, directory syncs, and writes and syncs of the files it
// opened) and dies of SIGKILL right after the at-th (0: never). Changes
// may come from several goroutines (blob syncs run in parallel): the
// count is taken under a mutex, and the process dies holding it, so no
// change follows the at-th.
type countingFS struct {
	vfs.FS
	at int
	mu sync.Mutex
	n  int
}

func (c *countingFS) changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.n == c.at {
		killSelf()
	}
}

// count is the number of changes so far.
func (c *countingFS) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *countingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		c.changed()
	}
	return &countingFile{File: f, c: c}, nil
}

func (c *countingFS) Mkdir(name string, perm fs.FileMode) error {
	return c.after(c.FS.Mkdir(name, perm))
}

func (c *countingFS) Rename(oldname, newname string) error {
	return c.after(c.FS.Rename(oldname, newname))
}

func (c *countingFS) RenameNoReplace(oldname, newname string) error {
	return c.after(c.FS.RenameNoReplace(oldname, newname))
}

func (c *countingFS) Remove(name string) error     { return c.after(c.FS.Remove(name)) }
func (c *countingFS) RemoveAll(name string) error  { return c.after(c.FS.RemoveAll(name)) }
func (c *countingFS) SyncDir(name string) error    { return c.after(c.FS.SyncDir(name)) }
func (c *countingFS) SyncAll(names []string) error { return c.after(c.FS.SyncAll(names)) }

func (c *countingFS) after(err error) error {
	if err == nil {
		c.changed()
	}
	return err
}

type countingFile struct {
	vfs.File
	c *countingFS
}

func (f *countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if n > 0 {
		f.c.changed()
	}
	return n, err
}

func (f *countingFile) Sync() error     { return f.c.after(f.File.Sync()) }
func (f *countingFile) Datasync() error { return f.c.after(f.File.Datasync()) }
