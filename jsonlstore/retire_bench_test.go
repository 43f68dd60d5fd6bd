package jsonlstore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

const (
	// retireBenchSessions is the number of sessions BenchmarkRetireRestore
	// retires and restores (the target's 1,000); retireBenchSessionsEnv
	// overrides it.
	retireBenchSessions    = 1000
	retireBenchSessionsEnv = "JSONLSTORE_RETIRE_BENCH_SESSIONS"
)

// BenchmarkRetireRestore retires every session of a store of text-heavy
// sessions (prose messages of 2 KiB, 8 revisions each: delta records,
// content inline) and restores them all, once per iteration. It checks
// each time that every restored session's files are byte for byte what
// they were and that Verify finds the store sound, and reports:
//
//   - live-B and retired-B: the sessions' files and the retired area's
//     files (packs and journal), in bytes, and retired/live, their ratio
//     (the target: at most 0.5);
//   - live-disk-B, retired-disk-B and retired/live-disk: the same in
//     allocated blocks (what du says), where every small file costs a
//     block;
//   - retire-ms/session and restore-ms/session.
func BenchmarkRetireRestore(b *testing.B) {
	n := proctest.EnvInt(b, retireBenchSessionsEnv, retireBenchSessions)
	ctx := context.Background()
	st := openTestStoreWith(b, Options{})
	dir := st.Dir()
	ids := make([]session.SessionID, n)
	for i := range ids {
		ids[i] = session.SessionID(fmt.Sprintf("bench-%05d", i))
		makeRetireSession(b, st, ids[i], 8, map[string]string{"bench": "retire"}, 2048)
	}
	orig := map[session.SessionID]map[string]string{}
	var live, liveDisk int64
	for _, id := range ids {
		orig[id] = sessionFiles(b, dir, id)
		s, d := treeSize(b, filepath.Join(dir, string(id)))
		live += s
		liveDisk += d
	}
	var retired, retiredDisk int64
	var retireTime, restoreTime time.Duration
	b.SetBytes(live)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		rep, err := st.Retire(ctx, maintenance.RetireOptions{Labels: map[string]string{"bench": "retire"}})
		require.NoError(b, err)
		require.Len(b, rep.Retired, n)
		require.Empty(b, rep.Skipped)
		retireTime += time.Since(start)

		b.StopTimer()
		retired, retiredDisk = treeSize(b, filepath.Join(dir, retire.Dir))
		b.StartTimer()

		start = time.Now()
		rrep, err := st.Restore(ctx, ids...)
		require.NoError(b, err)
		require.Len(b, rrep.Restored, n)
		restoreTime += time.Since(start)

		b.StopTimer()
		for _, id := range ids {
			require.Equal(b, orig[id], sessionFiles(b, dir, id), "%s restored byte for byte", id)
		}
		vr, err := st.Verify(ctx)
		require.NoError(b, err)
		require.True(b, vr.OK(), "verify after the restore: %+v", vr)
		b.StartTimer()
	}
	b.ReportMetric(float64(live), "live-B")
	b.ReportMetric(float64(retired), "retired-B")
	b.ReportMetric(float64(retired)/float64(live), "retired/live")
	b.ReportMetric(float64(liveDisk), "live-disk-B")
	b.ReportMetric(float64(retiredDisk), "retired-disk-B")
	b.ReportMetric(float64(retiredDisk)/float64(liveDisk), "retired/live-disk")
	b.ReportMetric(float64(retireTime.Milliseconds())/float64(b.N*n), "retire-ms/session")
	b.ReportMetric(float64(restoreTime.Milliseconds())/float64(b.N*n), "restore-ms/session")
}

// treeSize sums the sizes and the allocated blocks of the regular files
// below root (a journal and packs; or a session's files).
func treeSize(tb testing.TB, root string) (size, disk int64) {
	tb.Helper()
	require.NoError(tb, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			disk += st.Blocks * 512
		}
		if fi.Mode().IsRegular() {
			size += fi.Size()
		}
		return nil
	}))
	return size, disk
}
