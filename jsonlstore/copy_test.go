package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const (
	// copyWriters is the number of writer processes, one session each.
	copyWriters = 4
	// copyCopies is the number of copies TestCopyLiveStore makes.
	copyCopies = 5
	// copyDelayMax bounds the random wait before each copy.
	copyDelayMax = 50 * time.Millisecond
)

// TestCopyLiveStore backs a live store up the way users do, with `cp -r`,
// while copyWriters processes append continuously to their own sessions
// (no compaction runs). For every copy:
//
//   - every session in it opens at a valid revision: Load and History work,
//     with no error, and every record is what the generator wrote;
//   - that revision is at least the last one its writer had acknowledged
//     when cp started (it was durable, so in the file cp read), and at
//     most the original's latest after cp ended;
//   - the copy's lease reads as stale (copied while held), and a new holder
//     in the copy takes it at once — the originals' locks are not copied —
//     with a generation above every copied record's, reports the previous
//     holder stale although the original processes still run, removes any
//     torn tail cp caught mid-write, and appends;
//   - the original writers keep appending, unaffected.
//
// Then the writers are stopped: each releases cleanly, and the original
// store holds every revision they acknowledged.
func TestCopyLiveStore(t *testing.T) { copyLiveStore(t, false, copyCopies) }

// TestCopyLiveStoreWithBlobs is TestCopyLiveStore with the writers'
// large content out of line. cp may copy a session's blobs/ before its
// log, and then the revisions appended between the two reference blobs
// the copy lacks (README, "Backups"): every revision acknowledged before
// cp started loads whole from the copy, the latest loads or reports a
// missing blob, and a salvage of the copy leaves it sound with every such
// revision kept.
func TestCopyLiveStoreWithBlobs(t *testing.T) { copyLiveStore(t, true, 3) }

func copyLiveStore(t *testing.T, blobs bool, copies int) {
	seed := procSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x636f7079))
	ctx := t.Context()
	dir := t.TempDir()

	ids := make([]session.SessionID, copyWriters)
	writers := make([]*proctest.Child, copyWriters)
	for i := range writers {
		ids[i] = session.SessionID(fmt.Sprintf("copy-%d", i))
		env := procEnv(dir, ids[i], seed)
		if blobs {
			env = append(env, procBlobsEnv+"=1")
		}
		writers[i] = startProc(t, procModeAppend, env...)
	}
	for i, w := range writers {
		ready := procParseAcquired(t, w.Next(t), "ready")
		require.Equal(t, procAcquired{Gen: 1, Rev: 1}, ready, "writer %d creates its session", i)
		w.WaitAcks(t, 1)
	}
	lastAcks := func() []uint64 {
		acks := make([]uint64, len(writers))
		for i, w := range writers {
			_, acks[i] = w.Acks()
		}
		return acks
	}

	st, err := Open(dir, Options{})
	require.NoError(t, err)
	verifyAtCleanup(t, st)
	defer st.Close()
	var tails, cpNoise int
	start := time.Now()
	for c := range copies {
		time.Sleep(time.Duration(rng.Int64N(int64(copyDelayMax)))) // a random moment, not a synchronisation
		before := lastAcks()
		dst := filepath.Join(t.TempDir(), "copy")
		out, err := exec.CommandContext(ctx, "cp", "-r", dir, dst).CombinedOutput()
		cpNoise += copyCheckCp(t, out, err)
		// Stop the writers while the copy is checked, so that their logs
		// stay short enough to read again and again under -race. They
		// stay alive, holding their leases.
		for _, w := range writers {
			w.Signal(t, syscall.SIGSTOP)
		}
		written := make([]uint64, len(ids))
		for i, id := range ids {
			rec, err := st.Load(ctx, id)
			require.NoError(t, err)
			written[i] = rec.Revision
		}
		t0 := time.Now()
		tails += copyCheck(t, dst, ids, seed, before, written, blobs)
		t.Logf("copy %d: revisions %v..%v, checked in %s", c, before, written, time.Since(t0).Round(time.Millisecond))
		// The originals are unaffected: still held by their writers, whose
		// appends go on.
		for _, id := range ids {
			lease, err := st.Lease(ctx, id)
			require.NoError(t, err)
			require.Equal(t, summary.LeaseHeld, lease.State, "copy %d: original %s", c, id)
			require.Equal(t, uint64(1), lease.Generation, "copy %d: original %s", c, id)
		}
		after := lastAcks()
		for _, w := range writers {
			w.Signal(t, syscall.SIGCONT)
		}
		for i, w := range writers {
			w.WaitAck(t, after[i]+1) // the writer appends after the copy
		}
	}
	elapsed := time.Since(start)

	// Stop the writers; the original store holds all they acknowledged.
	for _, w := range writers {
		w.CloseStdin()
	}
	for i, w := range writers {
		w.Stop(t)
		m := proctest.Fields(t, w.Next(t), "done")
		_, last := w.Acks()
		require.Equal(t, last, proctest.Uint(t, m, "rev"), "writer %d: last acknowledged revision", i)
		hist, err := procCheckHistory(ctx, st, ids[i], seed, 0)
		require.NoError(t, err, "writer %d", i)
		require.Equal(t, last, hist.Latest, "writer %d", i)
		require.Equal(t, uint64(1), hist.Generation, "writer %d: one holder wrote everything", i)
		lease, err := st.Lease(ctx, ids[i])
		require.NoError(t, err)
		require.Equal(t, summary.LeaseFree, lease.State, "writer %d released", i)
	}
	kinds := map[string]int{}
	for _, id := range ids {
		for k, n := range logKinds(t, filepath.Join(dir, filepath.FromSlash(layout.LogPath(id)))) {
			kinds[k] += n
		}
	}
	require.Positive(t, kinds[record.KindDelta], "the copies caught delta records: %v", kinds)
	t.Logf("%d copies of a store with %d live writers in %s; %d copies of a log ended with a torn write; "+
		"cp complained of %d vanished temporary files; final revisions %v",
		copies, copyWriters, elapsed.Round(time.Millisecond), tails, cpNoise, lastAcks())
}

// copyCheckCp checks the result of cp: success, or a failure whose every
// complaint is about a temporary file (a summary or lease replacement)
// that vanished between cp listing a directory and copying it — an
// atomic replacement renames its temporary file away. It returns the
// number of such complaints.
func copyCheckCp(t *testing.T, out []byte, err error) int {
	t.Helper()
	if err == nil {
		require.Empty(t, strings.TrimSpace(string(out)), "cp output")
		return 0
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		require.True(t, strings.Contains(l, "No such file or directory") && strings.Contains(l, ".tmp"),
			"cp failed (%v) on something other than a vanished temporary file:\n%s", err, out)
	}
	return len(lines)
}

// copyCheck checks one copy (see TestCopyLiveStore) and returns the number
// of its sessions whose log ended with a torn write. Before holds the
// revisions acknowledged before cp started, written the originals' latest
// revisions after it ended.
func copyCheck(t *testing.T, dst string, ids []session.SessionID, seed uint64, before, written []uint64, blobs bool) int {
	t.Helper()
	ctx := t.Context()
	cs, err := Open(dst, Options{})
	require.NoError(t, err)
	defer cs.Close()
	if blobs {
		for i, id := range ids {
			for rev := uint64(1); rev <= before[i]; rev++ {
				rec, err := cs.LoadRevision(ctx, id, rev)
				require.NoError(t, err, "%s revision %d, acknowledged before cp started", id, rev)
				require.NoError(t, procCheckRecord(id, seed, rec))
			}
			if _, err := cs.Load(ctx, id); err != nil {
				require.ErrorIs(t, err, ErrBlob, "%s in the copy: a later revision may lack a blob, nothing else", id)
				_, err := cs.Repair(ctx, id, maintenance.RepairOptions{Salvage: true})
				require.NoError(t, err, "%s: salvage of the copy", id)
				vr, err := cs.Verify(ctx, id)
				require.NoError(t, err)
				require.True(t, vr.OK(), "%s: the salvaged copy is sound: %+v", id, vr)
				for rev := uint64(1); rev <= before[i]; rev++ {
					_, err := cs.LoadRevision(ctx, id, rev)
					require.NoError(t, err, "%s revision %d after the salvage", id, rev)
				}
			}
		}
		return 0
	}

	page, err := cs.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, len(ids), "list of the copy")

	tails := 0
	for i, id := range ids {
		lease, err := cs.Lease(ctx, id)
		require.NoError(t, err)
		require.Equal(t, summary.LeaseStale, lease.State, "%s in the copy: copied while held", id)

		rec, err := cs.Load(ctx, id)
		require.NoError(t, err, "%s in the copy", id)
		require.NoError(t, procCheckRecord(id, seed, rec), "%s in the copy", id)
		require.GreaterOrEqual(t, rec.Revision, before[i], "%s in the copy: a revision acknowledged before cp started is missing", id)
		require.LessOrEqual(t, rec.Revision, written[i], "%s in the copy: beyond what the original holds", id)
		hist, err := procCheckHistory(ctx, cs, id, seed, 0)
		require.NoError(t, err, "%s in the copy", id)
		require.Equal(t, rec.Revision, hist.Latest, "%s in the copy: load and history disagree", id)

		w, err := cs.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "copy-test"})
		require.NoError(t, err, "%s in the copy: a new holder, while the original holder lives", id)
		rep := w.Recovery()
		require.Equal(t, summary.LeaseStale, rep.Previous.State, "%s in the copy: previous holder", id)
		require.Greater(t, w.Generation(), hist.Generation, "%s in the copy: generation above the copied records'", id)
		require.Greater(t, w.Generation(), lease.Generation, "%s in the copy: generation above the copied lease's", id)
		require.Equal(t, rec.Revision, w.Revision(), "%s in the copy: recovery removed a valid record", id)
		if rep.TailBytes > 0 {
			tails++
		}
		snap, err := procSnapshot(id, seed, w.Revision()+1)
		require.NoError(t, err)
		rev, err := w.Append(ctx, w.Revision(), snap)
		require.NoError(t, err, "%s in the copy: append", id)
		require.Equal(t, rec.Revision+1, rev)
		got, err := cs.Load(ctx, id)
		require.NoError(t, err)
		require.NoError(t, procCheckRecord(id, seed, got))
		require.Equal(t, rev, got.Revision)
		require.NoError(t, w.Release(context.WithoutCancel(ctx)))
	}
	return tails
}
