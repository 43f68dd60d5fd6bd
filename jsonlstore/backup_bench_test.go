package jsonlstore

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/offline"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// procWchar is the bytes this process has passed to write(2) and its
// kind so far (/proc/self/io's wchar): what a step wrote, whatever file.
func procWchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io")
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("wchar: ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Skip("no wchar in /proc/self/io")
	return 0
}

// TestBackupTargets measures the targets of the incremental backup beside
// their baselines, in one run (set SESSIONSTORE_BACKUP_TARGETS to the
// number of sessions, 10000 for the target's size):
//
//   - an incremental backup after 10 sessions gained one message each,
//     against a fresh listing of every session (`sessions ls --all`: a
//     store opened anew, every page of List); and the bytes it wrote
//     (every write(2) of the process, leases and all) against the bytes
//     the appends added to the logs;
//   - a first, full backup against `cp -r` of the store followed by
//     `sync`, and the same backup without its check (the floor): the
//     medians of SESSIONSTORE_BACKUP_ROUNDS rounds (3 unless set), each
//     leg after a sync of its own and after no removal, in an order that
//     turns each round.
//
// The store is made anew for each run, or, when
// SESSIONSTORE_BACKUP_STORE names a directory, made there once and kept
// for the runs after (made again when it was made for another number of
// sessions); a run appends a message to 10 of its sessions.
func TestBackupTargets(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SESSIONSTORE_BACKUP_TARGETS"))
	if n == 0 {
		t.Skip("set SESSIONSTORE_BACKUP_TARGETS=10000")
	}
	ctx := t.Context()
	st := backupTargetsStore(t, n)
	// The full backup beside its baseline: rounds of three legs (cp -r +
	// sync, the backup, the backup without its check), each into a new
	// directory and each after a sync of its own, so that no leg pays for
	// the dirty pages another left (sync flushes the whole machine's);
	// the legs' order turns each round, and the medians are compared.
	// Every leg's copy is kept until the rounds end: removing a copy of
	// the store slows the kernel's creation of files for the leg after it
	// (on ext4 here, a removed copy took a floor leg from 2.5 to 6.6 s and
	// cp -r + sync from 4.2 to 14–17 s), and the legs would be timed on
	// what the one before left rather than on what they do.
	rounds, _ := strconv.Atoi(os.Getenv("SESSIONSTORE_BACKUP_ROUNDS"))
	if rounds <= 0 {
		rounds = 3
	}
	flush := func() {
		out, err := exec.Command("sync").CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	var cpTimes, fullTimes, floorTimes []time.Duration
	var dest string
	legs := []func(dir string){
		func(dir string) {
			start := time.Now()
			out, err := exec.Command("sh", "-c", `cp -r "$0" "$1" && sync`, st.Dir(), dir).CombinedOutput()
			cpTimes = append(cpTimes, time.Since(start))
			require.NoError(t, err, "%s", out)
		},
		func(dir string) {
			start := time.Now()
			rep, err := st.Backup(ctx, dir)
			fullTimes = append(fullTimes, time.Since(start))
			require.NoError(t, err)
			require.True(t, rep.OK())
			require.Len(t, rep.Sessions, n)
			dest = dir
		},
		// The floor: the same full backup without checking what it copies.
		func(dir string) {
			offline.VerifyStaged = false
			defer func() { offline.VerifyStaged = true }()
			start := time.Now()
			_, err := st.Backup(ctx, dir)
			floorTimes = append(floorTimes, time.Since(start))
			require.NoError(t, err)
		},
	}
	for r := range rounds {
		for i := range legs {
			leg := (r + i) % len(legs)
			dir := filepath.Join(t.TempDir(), "leg") // kept: removed when the test ends
			flush()
			legs[leg](dir)
		}
	}
	cpTime, fullTime, floorTime := median(cpTimes), median(fullTimes), median(floorTimes)

	// The share of the full backup that is its verification: the same
	// Verify again, on its own.
	vdst, err := Open(dest, Options{})
	require.NoError(t, err)
	vStart := time.Now()
	vrep, err := vdst.Verify(ctx)
	verifyTime := time.Since(vStart)
	require.NoError(t, err)
	require.True(t, vrep.OK())
	require.NoError(t, vdst.Close())

	var appended int64
	for i := range 10 {
		id := session.SessionID(fmt.Sprintf("s%05d", i*(n/10)))
		before := logSize(t, st, id)
		bkGrow(t, st, id, 1, 0)
		appended += logSize(t, st, id) - before
	}

	lsStart := time.Now()
	fresh, err := Open(st.Dir(), Options{})
	require.NoError(t, err)
	listed, cursor := 0, ""
	for {
		page, err := fresh.List(ctx, summary.Query{Cursor: cursor})
		require.NoError(t, err)
		listed += len(page.Items)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	lsTime := time.Since(lsStart)
	require.NoError(t, fresh.Close())
	require.Equal(t, n, listed)

	w0 := procWchar(t)
	incStart := time.Now()
	fresh, err = Open(st.Dir(), Options{})
	require.NoError(t, err)
	rep, err := fresh.Backup(ctx, dest)
	incTime := time.Since(incStart)
	written := procWchar(t) - w0
	require.NoError(t, fresh.Close())
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Len(t, rep.Sessions, 10)
	require.Equal(t, n-10, rep.Unchanged)

	t.Logf("incremental backup of %d sessions, 10 appended: %v; fresh ls --all: %v; ratio %.2f (target <= 3)",
		n, incTime, lsTime, incTime.Seconds()/lsTime.Seconds())
	t.Logf("bytes written %d (report: %d) for %d bytes appended; ratio %.2f (target <= 1.2)",
		written, rep.BytesCopied, appended, float64(written)/float64(appended))
	t.Logf("full backup, %d rounds: %v (a Verify of the copy alone: %v); cp -r + sync: %v", rounds, fullTimes, verifyTime, cpTimes)
	t.Logf("full backup, median %v; cp -r + sync, median %v; speed ratio %.2f (target >= 0.7)",
		fullTime, cpTime, cpTime.Seconds()/fullTime.Seconds())
	t.Logf("floor: the same full backup without its check: %v, median %v; speed ratio %.2f",
		floorTimes, floorTime, cpTime.Seconds()/floorTime.Seconds())
}

// backupTargetsStore is TestBackupTargets' store of n sessions: made in
// a temporary directory, or in SESSIONSTORE_BACKUP_STORE once (a file
// there records for how many sessions it was made) and opened there on
// the runs after.
func backupTargetsStore(t *testing.T, n int) *Store {
	t.Helper()
	dir := os.Getenv("SESSIONSTORE_BACKUP_STORE")
	if dir == "" {
		st := openUncheckedStoreWith(t, Options{})
		bkGrowAll(t, st, n)
		return st
	}
	made := filepath.Join(dir, ".backup-targets")
	want := strconv.Itoa(n)
	if b, err := os.ReadFile(made); err != nil || string(b) != want {
		require.NoError(t, os.RemoveAll(dir))
		st, err := Open(dir, withSearch(Options{}))
		require.NoError(t, err)
		bkGrowAll(t, st, n)
		require.NoError(t, st.Close())
		require.NoError(t, os.WriteFile(made, []byte(want), 0o600))
	}
	st, err := Open(dir, withSearch(Options{}))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// bkGrowAll makes sessions s00000… of st, n of them, of 2 to 6
// revisions.
func bkGrowAll(t *testing.T, st *Store, n int) {
	t.Helper()
	for i := range n {
		bkGrow(t, st, session.SessionID(fmt.Sprintf("s%05d", i)), 2+i%5, 0)
	}
}

// median is the middle of ds (the mean of the two middle ones when their
// number is even).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
