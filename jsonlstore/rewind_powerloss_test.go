package jsonlstore

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
)

// Power loss during rewinds: a session of 12 messages is resumed by a
// handle in a new lease, which rewinds it to 9 messages, pops one and
// rewinds to 5 — drop records, the first right after the resume — and is
// left held, as a process that dies holding it. Every crash of every sync
// point must leave the session readable at the last acknowledged revision
// or the one being written, each with exactly the first messages it
// meant, never anything else; every acknowledged revision keeps its
// messages; and the crashed store resumes and appends.

const rwplID = rplID // rplSnapshot is this session

// rwplCounts is how many messages each revision holds, by revision (from
// 1): the created session, the rewind, the pop and the second rewind.
var rwplCounts = []int{12, 9, 8, 5}

func rwplOptions() Options { return Options{Now: crashtest.Clock(sessiontest.Epoch)} }

// rewindPowerWorkload runs the rewinds on a Recorder; Ack is the last
// acknowledged revision.
func rewindPowerWorkload(t testing.TB, mutate int) *crashtest.Recorder[uint64] {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[uint64](mutate)
	defer rec.Stop()
	withCatalogDirs(t, rec.Sim, false)
	st := newStore(fltRoot, nil, rec.FS, newSimLeaser(rec.Sim, fltRoot), rwplOptions())
	t.Cleanup(func() { st.Close() })
	rec.Step = "create"
	w, err := st.Create(ctx, rplSnapshot(rwplCounts[0]), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec.Ack = w.Revision()
	require.NoError(t, w.Release(ctx))

	rec.Step = "resume"
	h, err := sessionstore.Open(ctx, st, rwplID, sessionstore.HandleOptions{})
	require.NoError(t, err)
	for _, n := range rwplCounts[1:] {
		if n == len(h.Snapshot().Messages)-1 {
			rec.Step = "pop"
			_, ok, err := h.Pop(ctx)
			require.NoError(t, err)
			require.True(t, ok)
		} else {
			rec.Step = "rewind"
			_, err := h.Rewind(ctx, n)
			require.NoError(t, err)
		}
		rec.Ack = h.Revision()
	}
	rec.Mark("end of workload")
	log, err := rec.Sim.ReadFile(layout.LogPath(rwplID))
	require.NoError(t, err)
	require.Equal(t, len(rwplCounts)-1, strings.Count(string(log), `"drop":{"messages":`), "each rewind and the pop is a drop record")
	return rec
}

// rewindPowerCheck: the latest revision is the acknowledged one or the
// one after, every revision up to it holds its first messages, and the
// crashed store resumes and appends.
func rewindPowerCheck(crashed *vfs.Sim, p crashtest.Point[uint64], _ crashtest.Crash, _ *rand.Rand) error {
	ctx := context.Background()
	st := newStore(fltRoot, nil, crashed, newSimLeaser(crashed, fltRoot), rwplOptions())
	defer st.Close()
	if p.Ack == 0 {
		return nil
	}
	want := func(rec sessionstore.Record, what string) error {
		if rec.Revision < 1 || rec.Revision > uint64(len(rwplCounts)) {
			return crashtest.Violate(what, "revision %d was never written", rec.Revision)
		}
		if n := len(rec.Snapshot.Messages); n != rwplCounts[rec.Revision-1] {
			return crashtest.Violate(what, "revision %d holds %d messages, not %d", rec.Revision, n, rwplCounts[rec.Revision-1])
		}
		for i, m := range rec.Snapshot.Messages {
			if m.Parts[0].Text != resumeMessageAt(i).Parts[0].Text {
				return crashtest.Violate(what, "revision %d: message %d is not the one it kept", rec.Revision, i)
			}
		}
		return nil
	}
	latest, err := st.Load(ctx, rwplID)
	if err != nil {
		return crashtest.Violate("latest", "%w", err)
	}
	if latest.Revision < p.Ack || latest.Revision > p.Ack+1 {
		return crashtest.Violate("latest", "revision %d read, %d was acknowledged", latest.Revision, p.Ack)
	}
	if err := want(latest, "latest"); err != nil {
		return err
	}
	for rev := uint64(1); rev <= latest.Revision; rev++ {
		rec, err := st.LoadRevision(ctx, rwplID, rev)
		if err != nil {
			return crashtest.Violate("revisions", "revision %d: %w", rev, err)
		}
		if err := want(rec, "revisions"); err != nil {
			return err
		}
	}
	h, err := sessionstore.Open(ctx, st, rwplID, sessionstore.HandleOptions{})
	if err != nil {
		return crashtest.Violate("resume", "%w", err)
	}
	defer h.Close(ctx)
	kept := len(latest.Snapshot.Messages)
	if _, err := h.Add(ctx, resumeMessageAt(kept)); err != nil {
		return crashtest.Violate("add-after-resume", "%w", err)
	}
	got, err := st.Load(ctx, rwplID)
	if err != nil {
		return crashtest.Violate("add-after-resume", "load: %w", err)
	}
	if n := len(got.Snapshot.Messages); n != kept+1 || got.Snapshot.Messages[kept].Parts[0].Text != resumeMessageAt(kept).Parts[0].Text {
		return crashtest.Violate("add-after-resume", "%d messages after the add, %d kept before it", n, kept)
	}
	return nil
}

// TestRewindSurvivesPowerLoss: with the unkind power-loss model, a crash
// at any sync point of a resume and its rewinds and pop (drop records)
// leaves the session at the revision before a drop or after it, never
// anything else, loses no acknowledged revision, and the crashed store
// resumes and adds.
func TestRewindSurvivesPowerLoss(t *testing.T) {
	run := rewindPowerWorkload(t, -1)
	points := run.Points()
	require.Greater(t, len(points), 3)
	states, distinct := crashtest.Sweep(t, points, 6, rewindPowerCheck)
	t.Logf("%d sync points, %d crashed states (%d distinct)", len(points), states, distinct)
}
