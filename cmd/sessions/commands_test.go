package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/clitest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

func TestHelp(t *testing.T) {
	var names []string
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
				r := sessions(t, nil, args...)
				require.Equal(t, exitOK, r.Code, "%v: %s", args, r.Stderr)
				require.True(t, strings.HasPrefix(r.Stdout, "Usage: sessions "+name+" "), r.Stdout)
				require.Contains(t, r.Stdout, "--dir directory")
				require.NotContains(t, r.Stdout, "--now", "hidden flags stay hidden")
				require.Empty(t, r.Stderr)
			}
		})
	}
	r := sessions(t, nil, "help")
	require.Equal(t, exitOK, r.Code)
	for _, name := range names {
		require.Equal(t, !commands[name].hidden, strings.Contains(r.Stdout, "\n  "+name+" "), name)
	}
	require.Equal(t, r.Stdout, sessions(t, nil, "--help").Stdout)

	for _, args := range [][]string{{}, {"frobnicate"}, {"--bogus", "ls"}, {"help", "frobnicate"}, {"ls", "--bogus"},
		{"show"}, {"show", "a", "b"}, {"show", "../x"}, {"--dir"}} {
		r := sessions(t, nil, args...)
		require.Equal(t, exitUsage, r.Code, "%v", args)
		require.NotEmpty(t, r.Stderr, "%v", args)
	}
}

// TestStoreDir: --dir (before or after the command) wins over
// $SESSIONSTORE_DIR, which wins over $XDG_DATA_HOME/sessionstore, which
// wins over ~/.local/share/sessionstore.
func TestStoreDir(t *testing.T) {
	base := t.TempDir()
	mk := func(dir, id string) {
		st, err := jsonlstore.Open(dir, jsonlstore.Options{})
		require.NoError(t, err)
		writeSession(t, st, sessiontest.New(id), 0)
		require.NoError(t, st.Close())
	}
	home := filepath.Join(base, "home")
	mk(filepath.Join(home, ".local", "share", "sessionstore"), "in-home")
	mk(filepath.Join(base, "xdg", "sessionstore"), "in-xdg")
	mk(filepath.Join(base, "env"), "in-env")
	mk(filepath.Join(base, "flag"), "in-flag")
	mk(filepath.Join(base, "flag2"), "in-flag2")
	ids := func(env []string, args ...string) string {
		t.Helper()
		r := sessions(t, env, append(args, "--json")...)
		require.Equal(t, exitOK, r.Code, r.Stderr)
		var page summary.Page
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &page))
		var out []string
		for _, s := range page.Items {
			out = append(out, string(s.ID))
		}
		return strings.Join(out, ",")
	}
	env := []string{"HOME=" + home}
	require.Equal(t, "in-home", ids(env, "ls"))
	env = append(env, "XDG_DATA_HOME="+filepath.Join(base, "xdg"))
	require.Equal(t, "in-xdg", ids(env, "ls"))
	env = append(env, "SESSIONSTORE_DIR="+filepath.Join(base, "env"))
	require.Equal(t, "in-env", ids(env, "ls"))
	require.Equal(t, "in-flag", ids(env, "--dir", filepath.Join(base, "flag"), "ls"))
	require.Equal(t, "in-flag", ids(env, "ls", "--dir", filepath.Join(base, "flag")))
	require.Equal(t, "in-flag2", ids(env, "--dir", filepath.Join(base, "flag"), "ls", "--dir", filepath.Join(base, "flag2")))

	r := sessions(t, nil, "--dir", filepath.Join(base, "nothing-here"), "ls")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "no store at")
	_, err := os.Stat(filepath.Join(base, "nothing-here"))
	require.ErrorIs(t, err, os.ErrNotExist, "reading commands create no store")
}

func TestVerifyExitStatus(t *testing.T) {
	root := fixtureStore(t, "clean", "crc-fail-last-line")
	require.Equal(t, exitOK, sessions(t, nil, "--dir", root, "verify").Code)
	require.Equal(t, exitFail, sessions(t, nil, "--dir", root, "verify", "missing").Code, "an unknown session kept verify from checking")
	require.Equal(t, exitFail, sessions(t, nil, "--dir", root+"/nothing", "verify").Code, "so does a missing store, as for every command")
	require.Equal(t, exitUsage, sessions(t, nil, "--dir", root, "verify", "--frob").Code)

	// One flipped bit in the middle of the clean log.
	path := filepath.Join(root, "clean", jsonlstore.LogFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x01
	require.NoError(t, os.WriteFile(path, data, 0o600))
	r := sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitCorrupt, r.Code, r.String())
	require.Contains(t, r.Stdout, "clean: CORRUPT")
	require.Contains(t, r.Stdout, "problem: clean/log.jsonl offset ")
	require.Equal(t, exitOK, sessions(t, nil, "--dir", root, "verify", "crc-fail-last-line").Code)
}

// TestVerifyWhileWriting runs the verify binary again and again while
// writers in this process append to their sessions and a holder keeps
// leaving torn tails that the next holder cuts: verify must exit 0 every
// time.
func TestVerifyWhileWriting(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	// The writers run until the verifier has made at least minRuns runs
	// and two seconds have passed, however slow the machine.
	const minRuns = 5
	var stopped atomic.Bool
	running := func() bool { return !stopped.Load() }
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 3 {
		s := sessiontest.InState(fmt.Sprintf("w%d", i), session.StateRunning)
		snap, err := sessnap.Of(s)
		require.NoError(t, err)
		w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "writer"})
		require.NoError(t, err)
		wg.Go(func() {
			defer w.Release(ctx)
			for rev := uint64(1); running(); rev++ {
				text := strings.Repeat("tokens ", 20+int(rev%5)*30)
				if err := s.AppendMessage(session.TextMessage(session.RoleAssistant, text, sessiontest.Epoch)); err != nil {
					errs <- err
					return
				}
				snap, err := sessnap.Of(s)
				if err == nil {
					_, err = w.Append(ctx, rev, snap)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	writeSession(t, st, sessiontest.New("torn"), 0)
	tornLog := filepath.Join(root, "torn", jsonlstore.LogFile)
	wg.Go(func() {
		for running() {
			f, err := os.OpenFile(tornLog, os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				_, err = f.WriteString(`{"v":1,"schema":1,"rev":2,"gen":`)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				errs <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
			w, err := st.Acquire(ctx, "torn", sessionstore.AcquireOptions{Label: "recoverer"})
			if err != nil {
				errs <- err
				return
			}
			if err := w.Release(ctx); err != nil {
				errs <- err
				return
			}
		}
	})
	runs := 0
	for deadline := time.Now().Add(2 * time.Second); runs < minRuns || time.Now().Before(deadline); runs++ {
		r := sessions(t, nil, "--dir", root, "verify", "--quiet")
		if r.Code != exitOK {
			stopped.Store(true)
			wg.Wait()
			require.Equal(t, exitOK, r.Code, "false alarm on a live store:\n%s", r)
		}
	}
	stopped.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d verify runs", runs)
}

// TestRmRefusesHeld: rm refuses a session another process holds, naming
// the holder; with --wait it deletes once the holder lets go.
func TestRmRefusesHeld(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	writeSession(t, st, sessiontest.New("busy"), 1)
	w, err := st.Acquire(ctx, "busy", sessionstore.AcquireOptions{Label: "agent-cli"})
	require.NoError(t, err)

	r := sessions(t, nil, "--dir", root, "rm", "busy")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "session busy is held by agent-cli pid "+strconv.Itoa(os.Getpid()))
	require.Contains(t, r.Stderr, "stop it first, or rm with --wait")
	r = sessions(t, nil, "--dir", root, "rm", "busy", "--wait", "100ms")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "still after waiting 100ms")
	_, err = st.Load(ctx, "busy")
	require.NoError(t, err, "still there")

	r = sessions(t, nil, "--dir", root, "lease", "busy")
	require.Equal(t, exitOK, r.Code)
	require.Contains(t, r.Stdout, "state       held")
	require.Contains(t, r.Stdout, fmt.Sprintf("the holder (pid %d on host", os.Getpid()))
	require.Contains(t, r.Stdout, "is alive; stop it, or wait")

	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = w.Release(ctx) // if it fails, rm --wait below times out and the test fails
	}()
	r = sessions(t, nil, "--dir", root, "rm", "--wait", "10s", "busy")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Equal(t, "removed busy\n", r.Stdout)
	_, err = st.Load(ctx, "busy")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	r = sessions(t, nil, "--dir", root, "rm", "busy")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "not found")
}

// TestRmSeveral: rm deletes every session named; one that cannot be
// deleted (unknown, held) is named with its reason, the others are still
// deleted, and the exit status is 1.
func TestRmSeveral(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	for _, id := range []string{"one", "two", "held", "three"} {
		writeSession(t, st, sessiontest.New(id), 1)
	}
	w, err := st.Acquire(ctx, "held", sessionstore.AcquireOptions{Label: "agent-cli"})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Release(ctx)) }()

	r := sessions(t, nil, "--dir", root, "rm", "one", "nope", "two", "held", "three")
	require.Equal(t, exitFail, r.Code, r.String())
	require.Equal(t, "removed one\nremoved two\nremoved three\n", r.Stdout)
	require.Contains(t, r.Stderr, "nope")
	require.Contains(t, r.Stderr, "session held is held by agent-cli")
	for _, id := range []session.SessionID{"one", "two", "three"} {
		_, err := st.Load(ctx, id)
		require.ErrorIs(t, err, sessionstore.ErrNotFound, id)
	}
	_, err = st.Load(ctx, "held")
	require.NoError(t, err, "a held session stays")

	r = sessions(t, nil, "--dir", root, "rm")
	require.Equal(t, exitUsage, r.Code)
	require.Contains(t, r.Stderr, "name the sessions to delete")
}

func TestLeaseStale(t *testing.T) {
	root := statesStore(t)
	r := inProcess(t, "--dir", root, "lease", "s11-stale")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "state        stale")
	require.Contains(t, r.Stdout, "last holder  crashed-agent")
	require.Contains(t, r.Stdout, "the previous holder died; the next acquirer recovers it automatically")
	r = inProcess(t, "--dir", root, "lease", "s1-idle", "--json")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	var lr leaseReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &lr))
	require.Equal(t, summary.LeaseFree, lr.Lease.State)
	require.Equal(t, "golden", lr.Lease.Holder.Label)
	require.Equal(t, exitFail, inProcess(t, "--dir", root, "lease", "nope").Code)
}

func TestRepairCLI(t *testing.T) {
	root := fixtureStore(t, "bitflip-middle", "crc-fail-claims-old-revision")
	r := sessions(t, nil, "--dir", root, "repair", "bitflip-middle")
	require.Equal(t, exitCorrupt, r.Code, r.String())
	require.Contains(t, r.Stdout, "found: bitflip-middle/log.jsonl offset 1158 (revision 3): damaged record followed by valid records: record checksum mismatch")
	require.Contains(t, r.Stdout, "cut: nothing (not asked to: --salvage or --truncate-at-corruption)")
	require.Contains(t, r.Stderr, "'sessions repair bitflip-middle --salvage' keeps every revision that can be read, '--truncate-at-corruption' cuts the log at offset 1158")

	r = sessions(t, nil, "--dir", root, "repair", "bitflip-middle", "--truncate-at-corruption")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "cut: the log at offset 1158, removing 2538 bytes")
	require.Contains(t, r.Stdout, "kept: bitflip-middle/forensic/repair-1158-")
	require.Contains(t, r.Stdout, "log: 2 records, revisions 1-2")
	r = sessions(t, nil, "--dir", root, "verify", "bitflip-middle")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "removed from the log by earlier recoveries or repairs")

	// A damaged tail that makes Acquire fail.
	r = sessions(t, nil, "--dir", root, "rm", "crc-fail-claims-old-revision")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "frees it first")
	r = sessions(t, nil, "--dir", root, "repair", "--json", "--truncate-at-corruption", "crc-fail-claims-old-revision")
	require.Equal(t, exitOK, r.Code, r.String())
	var rep maintenance.RepairReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep))
	require.True(t, rep.Cut)
	require.Equal(t, uint64(5), rep.Revision)
	require.Equal(t, exitOK, sessions(t, nil, "--dir", root, "rm", "crc-fail-claims-old-revision").Code)
}

func TestShowExportDu(t *testing.T) {
	root := statesStore(t)
	r := inProcess(t, "--dir", root, "show", "s3-awaiting")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	var snap sessnap.Snapshot
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &snap))
	require.Equal(t, session.StateAwaiting, snap.State)
	require.NotNil(t, snap.Pending)
	require.Contains(t, r.Stdout, "\n  \"state\": \"awaiting\",\n")

	r = inProcess(t, "--dir", root, "show", "--rev", "1", "s6-cancelled")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	r2 := inProcess(t, "--dir", root, "show", "s6-cancelled", "--rev=9")
	require.Equal(t, exitFail, r2.Code)
	require.Contains(t, r2.Stderr, "not found")

	r = inProcess(t, "--dir", root, "export", "--all-revisions", "s6-cancelled")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	require.Len(t, lines, 3)
	for i, l := range lines {
		var el sessionstore.ExportLine
		require.NoError(t, json.Unmarshal([]byte(l), &el))
		require.Equal(t, uint64(i+1), el.Revision)
	}
	r = inProcess(t, "--dir", root, "export", "--latest", "s6-cancelled")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &snap))
	require.Equal(t, session.StateCancelled, snap.State)

	r = inProcess(t, "--dir", root, "du", "--json")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	var du sessionstore.UsageReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &du))
	require.Len(t, du.Sessions, 11)
	require.Positive(t, du.Total.LogBytes)
	require.Positive(t, du.Total.OtherBytes)
}

// TestWatch starts the watch binary, sees the table, sees a session
// created meanwhile appear, sees its lease taken and given back (from the
// change feed alone), and stops it with SIGINT: exit status 0.
func TestWatch(t *testing.T) {
	root := statesStore(t)
	ctx, cancel := clitest.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "sessions"), "--dir", root, "watch", "--time-format", "rfc3339")
	cmd.Env = clitest.CleanEnv(t)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// waitFor reads lines until one holds every one of what. Tables are
	// printed one after the other, so a line read after another shows a
	// later state.
	waitFor := func(what ...string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "watch ended before showing %q; stderr: %s", what, stderr.String())
				if containsAll(l, what) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("watch never showed %q", what)
			}
		}
	}
	waitFor("s1-idle")
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	writeSession(t, st, sessiontest.InState("s12-late", session.StateCompleted), 0)
	waitFor("s12-late")
	w, err := st.Acquire(ctx, "s12-late", sessionstore.AcquireOptions{Label: "tester"})
	require.NoError(t, err)
	waitFor("s12-late", "held by tester")
	require.NoError(t, w.Release(ctx))
	waitFor("s12-late", "free")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for range lines {
	}
	require.NoError(t, cmd.Wait(), "Ctrl-C is a clean exit; stderr: %s", stderr.String())
	require.Empty(t, stderr.String())
}

// TestLogArchived: after compaction, log lists archived revisions first,
// marked as such, and verify checks them.
func TestLogArchived(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	writeSession(t, st, sessiontest.InState("compacted", session.StateRunning), 5)
	rep, err := st.Compact(ctx, "compacted", maintenance.CompactPolicy{KeepLast: 2}, 0)
	require.NoError(t, err)
	require.Positive(t, rep.RevisionsTrimmed)
	r := inProcess(t, "--dir", root, "log", "compacted")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	require.Len(t, lines, 7)
	for i, l := range lines[1:] {
		// Revisions before the first kept one (the full record that
		// starts the chain of the policy's first kept revision) are
		// archived.
		want := " log"
		if uint64(i+1) < rep.FirstKept {
			want = " archive"
		}
		require.True(t, strings.HasSuffix(l, want), l)
	}
	r = inProcess(t, "--dir", root, "verify")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "compacted: ok (6 sound records, revisions 1-6)")
}

// TestRepairSalvageCLI: --salvage keeps the revisions after a damaged
// record and records the missing one; verify then exits 0, noting it, and
// a newer version's session is never salvaged.
func TestRepairSalvageCLI(t *testing.T) {
	root := fixtureStore(t, "bitflip-middle", "duplicated-tail-full", "newer-format-v5")
	r := sessions(t, nil, "--dir", root, "repair", "bitflip-middle", "--salvage")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "salvaged: kept 4 records, dropped 0 duplicate lines")
	require.Contains(t, r.Stdout, "missing: revisions 3-3")
	require.Contains(t, r.Stdout, "kept: bitflip-middle/forensic/repair-1158-")
	require.Contains(t, r.Stdout, "log: 5 records, revisions 1-5")
	r = sessions(t, nil, "--dir", root, "verify", "bitflip-middle")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "revisions 3 to 3 are missing: a repair set them aside")

	r = sessions(t, nil, "--dir", root, "repair", "duplicated-tail-full", "--salvage")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "dropped 3 duplicate lines")
	require.Contains(t, r.Stdout, "log: 16 records, revisions 1-16")

	r = sessions(t, nil, "--dir", root, "verify", "newer-format-v5")
	require.Equal(t, exitNewer, r.Code, r.String())
	require.Contains(t, r.Stdout, "newer-format-v5: written by a newer version")
	require.NotContains(t, r.Stdout, "CORRUPT")
	r = sessions(t, nil, "--dir", root, "repair", "newer-format-v5", "--salvage")
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "newer version")
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestShowRevBeforeNewerRecord: `show --rev` reads a revision written
// before a newer version's record, as History does; the newer record's
// revision is refused as that version's.
func TestShowRevBeforeNewerRecord(t *testing.T) {
	root := fixtureStore(t, "newer-after-deltas")
	for rev := 1; rev <= 6; rev++ {
		r := inProcess(t, "--dir", root, "show", "--rev", fmt.Sprint(rev), "newer-after-deltas")
		require.Equal(t, exitOK, r.Code, "revision %d: %s", rev, r.String())
		if rev > 1 {
			require.Contains(t, r.Stdout, fmt.Sprintf("message %d", rev))
		}
		require.NotContains(t, r.Stdout, fmt.Sprintf("message %d", rev+1))
	}
	r := inProcess(t, "--dir", root, "show", "--rev", "7", "newer-after-deltas")
	require.NotEqual(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stderr, "written by a newer version")
	require.NotContains(t, r.Stderr, "corrupt")
}

// TestHelpFitsEightyColumns: every help page, the list of commands and
// each command's, fits an 80-column terminal.
func TestHelpFitsEightyColumns(t *testing.T) {
	pages := [][]string{{"help"}}
	for name := range commands {
		pages = append(pages, []string{name, "--help"})
	}
	for _, args := range pages {
		r := sessions(t, nil, args...)
		require.Equal(t, exitOK, r.Code, "%v: %s", args, r.Stderr)
		for i, line := range strings.Split(r.Stdout, "\n") {
			require.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%v, line %d: %q", args, i+1, line)
		}
	}
}
