package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/session"
)

const (
	// procModeRewindKill: resume session ID with a handle, rewind it to 7
	// messages, then to 5, pop one, and close, dying of SIGKILL at the
	// rewindKillAtEnv-th change it makes to the file system (0: never);
	// print "done ops=N first=F" when it finishes (F: the changes made
	// before the first rewind).
	procModeRewindKill = "rewind-kill"
	rewindKillAtEnv    = "JSONLSTORE_REWIND_KILL_AT"
)

// rewindKillTexts are the texts of the session's messages, user and
// assistant in turn.
func rewindKillTexts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("message %d", i+1)
	}
	return out
}

// rewindKillMessage is the i-th message (from 0) of the session.
func rewindKillMessage(i int, text string) session.Message {
	role := session.RoleUser
	if i%2 == 1 {
		role = session.RoleAssistant
	}
	return session.TextMessage(role, text, time.Time{})
}

// TestRewindKilled kills a child process that rewinds a session with
// the handle (two rewinds and a pop, drop records where the chain allows) at
// every change it makes to the file system in turn, from the handle's
// open to its close. After each kill, before anyone recovers anything,
// the session reads as one of the revisions the child meant to write
// (8 messages before, 7 and 5 after the rewinds, 4 after the pop), its
// messages exactly those of the original in order, never anything else;
// then a new handle resumes it and adds a message, which reads after
// those; and the store verifies sound. Each kill starts from a copy of
// the same store.
func TestRewindKilled(t *testing.T) {
	ctx := t.Context()
	const id = session.SessionID("rewind-kill")
	texts := rewindKillTexts(8)
	template := t.TempDir()
	st, err := Open(template, Options{})
	require.NoError(t, err)
	h, err := sessionstore.Open(ctx, st, id, sessionstore.HandleOptions{})
	require.NoError(t, err)
	for i, text := range texts {
		_, err := h.Add(ctx, rewindKillMessage(i, text))
		require.NoError(t, err)
	}
	require.NoError(t, h.Close(ctx))
	require.NoError(t, st.Close())

	run := func(dir string, at int) (ops, first int, killed bool) {
		env := []string{procDirEnv + "=" + dir, procIDEnv + "=" + string(id), rewindKillAtEnv + "=" + strconv.Itoa(at)}
		c := proctest.Start(t, proctest.Cmd{ModeEnv: procModeEnv, Mode: procModeRewindKill, Env: env})
		err := c.Wait(t)
		if err == nil {
			l, ok := c.TryNext()
			require.True(t, ok, "the child finished without saying so")
			done := proctest.Fields(t, l, "done")
			return int(proctest.Uint(t, done, "ops")), int(proctest.Uint(t, done, "first")), false
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the child must die or finish (stderr: %s)", c.Stderr())
		ws, ok := ee.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "died of %v: %s", err, c.Stderr())
		return 0, 0, true
	}
	fresh := func() string {
		dir := filepath.Join(t.TempDir(), "store")
		require.NoError(t, os.CopyFS(dir, os.DirFS(template)))
		return dir
	}
	texts0 := func(rec sessionstore.Record) []string {
		var out []string
		for _, m := range rec.Snapshot.Messages {
			out = append(out, m.Parts[0].Text)
		}
		return out
	}

	// A whole run: how many changes, and that it writes drop records (what
	// this test is for): the first rewind, right after a resume, is one
	// (the writer recognises the kept messages by what they hold), and so
	// is the second or the pop — on a session this small, the chain's
	// budget ends the chain with a full record at one of them.
	dir := fresh()
	total, first, _ := run(dir, 0)
	log, err := os.ReadFile(filepath.Join(dir, string(id), "log.jsonl"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, strings.Count(string(log), `"drop":{"messages":`), 2, "the rewinds and the pop write drop records")
	require.Contains(t, string(log), `"gen":2,"time":"`, "the child resumed the session")
	gen2 := string(log[strings.Index(string(log), `"gen":2,`):])
	require.Contains(t, gen2[:strings.Index(gen2, "\n")], `"drop":{"messages":1}`, "the first rewind, right after the resume, is a drop record")
	t.Logf("a run makes %d changes, %d before the first rewind", total, first)
	require.Greater(t, total, first)

	// Every kill point from the last change before the first rewind on
	// (about 15 child processes); with SESSIONSTORE_REWIND_KILL_ALL=1 the
	// handle's open too.
	from := max(first, 1)
	if os.Getenv("SESSIONSTORE_REWIND_KILL_ALL") == "1" {
		from = 1
	}
	seen := map[int]int{}
	for k := from; k <= total+1; k++ {
		name := fmt.Sprintf("killed at change %d of %d", k, total)
		dir := fresh()
		if _, _, killed := run(dir, k); !killed {
			require.Equal(t, total+1, k, "%s: the child finished", name)
		}
		st, err := Open(dir, Options{})
		require.NoError(t, err, name)
		rec, err := st.Load(ctx, id)
		require.NoError(t, err, name)
		got := texts0(rec)
		require.Contains(t, []int{8, 7, 5, 4}, len(got), "%s: %q", name, got)
		require.Equal(t, texts[:len(got)], got, name)
		seen[len(got)]++

		// A writer resumes after the kill and appends.
		h, err := sessionstore.Open(ctx, st, id, sessionstore.HandleOptions{})
		require.NoError(t, err, name)
		_, err = h.Add(ctx, rewindKillMessage(len(got), "after the kill"))
		require.NoError(t, err, name)
		require.NoError(t, h.Close(ctx), name)
		rec, err = st.Load(ctx, id)
		require.NoError(t, err, name)
		require.Equal(t, append(slices.Clone(got), "after the kill"), texts0(rec), name)
		rep, err := st.Verify(ctx)
		require.NoError(t, err, name)
		require.True(t, rep.OK(), "%s:\n%s", name, verifyProblems(rep))
		require.NoError(t, st.Close())
	}
	t.Logf("after the kills, the session read with: %v messages", seen)
	require.Positive(t, seen[8])
	require.Positive(t, seen[5], "a kill after the drop record of the second rewind")
	require.Positive(t, seen[4])
}

// rewindKillChild is procModeRewindKill.
func rewindKillChild(ctx context.Context) error {
	id := session.SessionID(os.Getenv(procIDEnv))
	at, err := strconv.Atoi(os.Getenv(rewindKillAtEnv))
	if err != nil {
		return err
	}
	st, err := Open(os.Getenv(procDirEnv), Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	cfs := &countingFS{FS: st.fs, at: at}
	swapFS(st, cfs)
	h, err := sessionstore.Open(ctx, st, id, sessionstore.HandleOptions{})
	if err != nil {
		return err
	}
	first := cfs.count()
	for _, n := range []int{7, 5} {
		if _, err := h.Rewind(ctx, n); err != nil {
			return err
		}
	}
	if _, ok, err := h.Pop(ctx); err != nil {
		return err
	} else if !ok {
		return errors.New("pop: no message")
	}
	if err := h.Close(ctx); err != nil {
		return err
	}
	fmt.Printf("done ops=%d first=%d\n", cfs.count(), first)
	return nil
}
