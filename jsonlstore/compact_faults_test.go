package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// The compaction fault tests: every I/O call of a compaction faulted in
// turn, and a segment that does not read back. They judge what they leave
// with the compaction crash test's checker (compact_crash_test.go).

// TestCompactFaults faults every I/O call a compaction makes, in turn —
// by the holder (maintenance.Compactor) and standalone (Store.Compact, whose lease
// acquisition, recovery and release are included) — on a session whose
// log starts at revision 13 (an earlier compaction archived 1-12): the
// compaction either succeeds, or fails and leaves the old state (the log
// still starts at 13), or, failing after the log's rename, the new one
// (37; both are full records). An error before the rename leaves the holder's writer usable (it
// appends); one after poisons it. Whatever happened, readers see every
// revision, and so does the state after a crash; the next holder
// recovers, appends and compacts, reclaiming every leftover. Read calls
// are many and all alike (each fails the compaction at once), so the
// sweep faults the first, middle and last of them.
func TestCompactFaults(t *testing.T) {
	ctx := context.Background()
	const acked, oldFirst, newFirst = 40, 13, 37
	policy := maintenance.CompactPolicy{KeepLast: acked - newFirst + 1}
	base := vfs.NewSim()
	{
		st := newStore(ccRoot, nil, base, newSimLeaser(base, ccRoot), Options{})
		w, err := st.Create(ctx, plSnapshot(ccID, 1, 0), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		for rev := uint64(2); rev <= acked; rev++ {
			_, err := w.Append(ctx, rev-1, plSnapshot(ccID, rev, 0))
			require.NoError(t, err)
			if rev == 30 {
				_, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 18})
				require.NoError(t, err)
			}
		}
		require.NoError(t, w.Release(ctx))
		require.NoError(t, st.Close())
	}
	type env struct {
		sim    *vfs.Sim
		faulty *vfs.Faulty
		st     *Store
		w      sessionstore.Writer // the holder, in holder mode
	}
	open := func(t *testing.T, holder bool) *env {
		e := &env{sim: base.Snapshot()}
		e.faulty = vfs.NewFaulty(e.sim)
		e.st = newStore(ccRoot, nil, e.faulty, newSimLeaser(e.sim, ccRoot), Options{})
		t.Cleanup(func() { e.st.Close() })
		if holder {
			var err error
			e.w, err = e.st.Acquire(ctx, ccID, sessionstore.AcquireOptions{})
			require.NoError(t, err)
		}
		return e
	}
	compact := func(e *env) (maintenance.CompactReport, error) {
		if e.w != nil {
			return e.w.(maintenance.Compactor).Compact(ctx, policy)
		}
		return e.st.Compact(ctx, ccID, policy, 0)
	}

	for _, mode := range []string{"holder", "standalone"} {
		// The calls of an unfaulted compaction, by operation.
		var calls []fltCall
		{
			e := open(t, mode == "holder")
			before := map[vfs.Op]int{}
			for _, op := range fltOps {
				before[op] = e.faulty.Calls(op)
			}
			rep, err := compact(e)
			require.NoError(t, err)
			require.Equal(t, uint64(newFirst), rep.FirstKept)
			for _, op := range fltOps {
				n := e.faulty.Calls(op) - before[op]
				for k := range n {
					if op == vfs.OpRead && k != 0 && k != n/2 && k != n-1 {
						continue
					}
					calls = append(calls, fltCall{op, k})
				}
			}
		}
		t.Logf("%s: faulting %d calls", mode, len(calls))
		var outcomes [3]atomic.Int64 // succeeded, failed in the old state, failed in the new
		t.Run(mode, func(t *testing.T) {
			for _, c := range calls {
				t.Run(fmt.Sprintf("%s#%d", c.op, c.k), func(t *testing.T) {
					t.Parallel()
					e := open(t, mode == "holder")
					e.faulty.Inject(vfs.Fault{Op: c.op, After: c.k})
					_, err := compact(e)
					require.Equal(t, 1, e.faulty.Fired(c.op), "the fault fired")
					e.faulty.Clear()
					after := e.sim.Snapshot()
					first, ferr := ccLogFirst(e.sim)
					require.NoError(t, ferr)
					require.Contains(t, []uint64{oldFirst, newFirst}, first, "old state or new")
					rev := uint64(acked)
					switch {
					case err == nil:
						outcomes[0].Add(1)
						require.Equal(t, uint64(newFirst), first, "a compaction that returned nil replaced the log")
					case first == oldFirst:
						outcomes[1].Add(1)
					default:
						outcomes[2].Add(1)
					}
					if e.w != nil {
						_, aerr := e.w.Append(ctx, rev, plSnapshot(ccID, rev+1, 0))
						switch {
						case err == nil || first == oldFirst && !errors.Is(err, sessionstore.ErrLeaseLost):
							require.NoError(t, aerr, "the writer is usable after %v", err)
							rev++
						case first == oldFirst:
							// Fencing could not check the log (a faulted
							// lstat): the writer refuses to write on.
							require.Equal(t, vfs.OpLstat, c.op, "only a fence fails with a lost lease: %v", err)
							require.ErrorIs(t, aerr, sessionstore.ErrLeaseLost)
						default:
							require.ErrorIs(t, err, sessionstore.ErrWriterFailed, "a failure after the log's rename poisons the writer")
							require.ErrorIs(t, aerr, sessionstore.ErrWriterFailed)
						}
						require.NoError(t, e.w.Release(ctx))
					}
					_, _, rerr := ccRevisions(ctx, e.st, rev, false, ccStateOnly)
					require.NoError(t, rerr)

					// A power loss right after the compaction returned (the
					// old state, or the new one when it returned nil).
					ack := ccAck{rev: acked, firsts: []uint64{oldFirst, newFirst}}
					if err == nil {
						ack.firsts = []uint64{newFirst}
					}
					if c.op != vfs.OpRead { // a failed read fails the compaction before it writes
						for i, crashed := range []*vfs.Sim{after.CrashDurableOnly(), after.Crash(crashtest.Rand(0xcf, uint64(c.k)))} {
							require.NoError(t, ccCheck(crashed, ack, crashtest.Rand(0xcf1, uint64(i)), ccStateOnly, nil), "crash %d", i)
						}
					}
					// The next holder, on the state as it is.
					require.NoError(t, ccCheck(e.sim, ccAck{rev: rev, firsts: []uint64{first}}, crashtest.Rand(0xcf2, uint64(c.k)), ccHistoryOnly, nil))
				})
			}
		})
		t.Logf("%s: %d succeeded, %d failed leaving the old state, %d failed after replacing the log",
			mode, outcomes[0].Load(), outcomes[1].Load(), outcomes[2].Load())
	}
}

// TestCompactVerifiesSegment: a segment that does not read back as what
// was written into it (here, a write the file system lost without a
// word) is never published: the compaction fails before it touches the
// manifest or the log, the holder's writer stays usable, and the temporary
// segment is removed.
func TestCompactVerifiesSegment(t *testing.T) {
	ctx := context.Background()
	sim := vfs.NewSim()
	faulty := vfs.NewFaulty(sim)
	st := newStore(ccRoot, nil, faulty, newSimLeaser(sim, ccRoot), Options{})
	defer st.Close()
	w, err := st.Create(ctx, plSnapshot(ccID, 1, 0), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for rev := uint64(2); rev <= 30; rev++ {
		_, err := w.Append(ctx, rev-1, plSnapshot(ccID, rev, 0))
		require.NoError(t, err)
	}
	logBefore, err := sim.ReadFile(layout.LogPath(ccID))
	require.NoError(t, err)
	faulty.Inject(vfs.Fault{Op: vfs.OpWrite, Silent: true, Match: func(n string) bool { return strings.Contains(n, "/.segment-") }})
	_, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 5})
	require.ErrorContains(t, err, "verify segment")
	require.Equal(t, 1, faulty.Fired(vfs.OpWrite))
	logAfter, err := sim.ReadFile(layout.LogPath(ccID))
	require.NoError(t, err)
	require.Equal(t, logBefore, logAfter, "the log is untouched")
	entries, err := sim.ReadDir(archive.Dir(ccID))
	require.NoError(t, err)
	require.Empty(t, entries, "no segment, no manifest, no temporary file")
	_, err = w.Append(ctx, 30, plSnapshot(ccID, 31, 0))
	require.NoError(t, err, "the writer is usable")
	rep, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 5})
	require.NoError(t, err)
	require.Equal(t, uint64(27), rep.FirstKept)
	_, _, err = ccRevisions(ctx, st, 31, false, ccEvery)
	require.NoError(t, err)
}
