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
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

const (
	// procModeRedactKill: redact session ID and die of SIGKILL at the
	// retireKillAtEnv-th change it makes to the file system (0: never);
	// print "done ops=N" when it finishes.
	procModeRedactKill = "redact-kill"
)

// TestRedactKilled kills a child process that redacts a session (with
// blobs, pages, deltas, an archive and a forensic copy, all holding
// secrets) at every change it makes to the file system in turn (each
// write, sync, creation, rename and removal: the child counts them and
// dies of SIGKILL right after the k-th), for k from 1 to the number a
// whole run makes, each time on a fresh copy of the leaky store. After
// each kill, before anyone recovers anything, every revision reads, and
// the history is either the old one (every revision as it was) or the new
// one (every revision the old one redacted), never a mix; verify finds
// the store sound. Then redact, run again in the parent, finishes: no
// file under the root holds a byte of a secret, and the history is the
// new one.
func TestRedactKilled(t *testing.T) {
	ctx := t.Context()
	// The leaky store, made once and copied for each run.
	src := openTestStoreWith(t, purgeOptions(t, true))
	const id = session.SessionID("rk")
	makeLeakySession(t, src, id, 16)
	old := historyOf(t, src, id)
	require.NoError(t, src.Close())
	r := redact.Default()
	var want []string
	var oldJSON []string
	for _, rec := range old {
		red, _ := r.Snapshot(rec.Snapshot)
		b, err := sessnap.Marshal(red)
		require.NoError(t, err)
		want = append(want, string(b))
		b, err = sessnap.Marshal(rec.Snapshot)
		require.NoError(t, err)
		oldJSON = append(oldJSON, string(b))
	}

	fresh := func() string {
		dir := filepath.Join(t.TempDir(), "store")
		require.NoError(t, os.CopyFS(dir, os.DirFS(src.Dir())))
		return dir
	}
	run := func(dir string, at int) (ops int, killed bool) {
		env := []string{procDirEnv + "=" + dir, procIDEnv + "=" + string(id), retireKillAtEnv + "=" + strconv.Itoa(at)}
		c := proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: procModeRedactKill, Env: env})
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
	// history returns which history st holds: "old" or "new".
	history := func(st *Store, name string) string {
		got := historyOf(t, st, id)
		require.Len(t, got, len(old), name)
		isOld, isNew := true, true
		for i, rec := range got {
			b, err := sessnap.Marshal(rec.Snapshot)
			require.NoError(t, err)
			isOld = isOld && string(b) == oldJSON[i]
			isNew = isNew && string(b) == want[i]
			require.Equal(t, old[i].Revision, rec.Revision, name)
			require.Equal(t, old[i].Generation, rec.Generation, name)
		}
		require.True(t, isOld || isNew, "%s: a mix of the old and the new history", name)
		if isNew {
			return "new"
		}
		return "old"
	}

	total, _ := run(fresh(), 0)
	t.Logf("a redaction makes %d changes", total)
	require.Greater(t, total, 10)
	counts := map[string]int{}
	for k := 1; k <= total; k++ {
		name := fmt.Sprintf("killed at change %d", k)
		dir := fresh()
		_, killed := run(dir, k)
		require.True(t, killed, name)
		st, err := Open(dir, purgeOptions(t, false))
		require.NoError(t, err, name)
		counts[history(st, name)]++
		rep, err := st.Verify(ctx)
		require.NoError(t, err, name)
		require.True(t, rep.OK(), "%s:\n%s", name, verifyProblems(rep))
		// Redact again: it finishes.
		_, err = st.Redact(ctx, []session.SessionID{id}, nil, 0)
		require.NoError(t, err, name)
		require.Equal(t, "new", history(st, name), name)
		bad, _ := filesWithSecrets(t, dir)
		require.Empty(t, bad, "%s: files still holding a secret", name)
		rep, err = st.Verify(ctx)
		require.NoError(t, err, name)
		require.True(t, rep.OK(), "%s:\n%s", name, verifyProblems(rep))
		require.NoError(t, st.Close())
	}
	t.Logf("after the kills: %v", counts)
	require.Positive(t, counts["old"])
	require.Positive(t, counts["new"])
}

// redactKillChild is procModeRedactKill.
func redactKillChild(ctx context.Context) error {
	id := session.SessionID(os.Getenv(procIDEnv))
	at, err := strconv.Atoi(os.Getenv(retireKillAtEnv))
	if err != nil {
		return err
	}
	st, err := Open(os.Getenv(procDirEnv), purgeOptions(nil, false))
	if err != nil {
		return err
	}
	defer st.Close()
	cfs := &countingFS{FS: st.fs, at: at}
	swapFS(st, cfs)
	reps, err := st.Redact(ctx, []session.SessionID{id}, nil, 0)
	if err != nil {
		return err
	}
	if reps[0].Rewritten == 0 {
		return fmt.Errorf("nothing rewritten: %+v", reps[0])
	}
	fmt.Printf("done ops=%d\n", cfs.count())
	return nil
}
