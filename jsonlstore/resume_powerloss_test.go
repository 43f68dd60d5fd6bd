package jsonlstore

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Power loss during the first append after a resume: a session whose
// older messages are in pages (a small record cap) and whose large ones
// are blobs is resumed four times — with sessionstore.Resume, with
// Acquire and a Load apart, and with Resume again, each followed by
// appends — and the last resume is left held, as a process that dies
// holding it. Every crash of every sync point must keep each acknowledged
// revision with its messages, and the crashed store must resume: its
// first append loads back.

const (
	rplID      = session.SessionID("pl-resume")
	rplCap     = 64 << 10 // pages of 16 KiB: resumes build on pages
	rplInitial = 10       // messages of revision 1
)

// rplSnapshot is the session holding messages 0…n-1 (resumeMessageAt).
func rplSnapshot(n int) sessnap.Snapshot {
	s := sessiontest.New(string(rplID))
	for i := range n {
		if err := s.AppendMessage(resumeMessageAt(i)); err != nil {
			panic(err)
		}
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		panic(err)
	}
	return snap
}

// rplMessages is how many messages revision rev holds.
func rplMessages(rev uint64) int { return rplInitial + int(rev) - 1 }

func rplOptions() Options {
	return Options{Now: crashtest.Clock(sessiontest.Epoch), MaxRecordBytes: rplCap}
}

// resumePowerWorkload runs the resumes on a Recorder (mutate as
// crashtest.Start takes it); Ack is the last acknowledged revision.
func resumePowerWorkload(t testing.TB, mutate int) *crashtest.Recorder[uint64] {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[uint64](mutate)
	defer rec.Stop()
	withCatalogDirs(t, rec.Sim, false)
	st := newStore(fltRoot, nil, rec.FS, newSimLeaser(rec.Sim, fltRoot), rplOptions())
	t.Cleanup(func() { st.Close() })
	rec.Step = "create"
	w, err := st.Create(ctx, rplSnapshot(rplInitial), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec.Ack = 1
	require.NoError(t, w.Release(ctx))
	appendNext := func(w sessionstore.Writer, latest sessionstore.Record) sessionstore.Record {
		t.Helper()
		next := latest.Snapshot
		next.Messages = append(next.Messages, resumeMessageAt(len(next.Messages)))
		rev, err := w.Append(ctx, latest.Revision, next)
		require.NoError(t, err)
		rec.Ack = rev
		return sessionstore.Record{Revision: rev, Snapshot: next}
	}
	for turn, how := range []string{"Resume", "Acquire and Load", "Resume", "Resume, held"} {
		rec.Step = "resume " + how
		var w sessionstore.Writer
		var latest sessionstore.Record
		if how == "Acquire and Load" {
			w, err = st.Acquire(ctx, rplID, sessionstore.AcquireOptions{})
			require.NoError(t, err)
			latest, err = st.Load(ctx, rplID)
		} else {
			w, latest, err = sessionstore.Resume(ctx, st, rplID, sessionstore.AcquireOptions{})
		}
		require.NoError(t, err)
		rec.Step = "first append after " + how
		latest = appendNext(w, latest)
		if turn < 3 {
			rec.Step = "second append after " + how
			appendNext(w, latest)
			require.NoError(t, w.Release(ctx))
		}
	}
	rec.Mark("end of workload")
	return rec
}

// resumePowerCheck: every acknowledged revision loads with its messages,
// and the crashed store resumes and appends.
func resumePowerCheck(crashed *vfs.Sim, p crashtest.Point[uint64], _ crashtest.Crash, _ *rand.Rand) error {
	ctx := context.Background()
	st := newStore(fltRoot, nil, crashed, newSimLeaser(crashed, fltRoot), rplOptions())
	defer st.Close()
	if p.Ack == 0 {
		return nil
	}
	want := func(rec sessionstore.Record, what string) error {
		if n := len(rec.Snapshot.Messages); n != rplMessages(rec.Revision) {
			return crashtest.Violate(what, "revision %d holds %d messages", rec.Revision, n)
		}
		for i, m := range rec.Snapshot.Messages {
			if m.Parts[0].Text != resumeMessageAt(i).Parts[0].Text {
				return crashtest.Violate(what, "revision %d: message %d is not what was appended", rec.Revision, i)
			}
		}
		return nil
	}
	for rev := uint64(1); rev <= p.Ack; rev++ {
		rec, err := st.LoadRevision(ctx, rplID, rev)
		if err != nil {
			return crashtest.Violate("acknowledged-revision", "revision %d: %w", rev, err)
		}
		if err := want(rec, "acknowledged-revision"); err != nil {
			return err
		}
	}
	w, latest, err := sessionstore.Resume(ctx, st, rplID, sessionstore.AcquireOptions{})
	if err != nil {
		return crashtest.Violate("resume", "%w", err)
	}
	defer w.Release(ctx)
	if latest.Revision < p.Ack {
		return crashtest.Violate("resume", "resumed revision %d, %d was acknowledged", latest.Revision, p.Ack)
	}
	if err := want(latest, "resume"); err != nil {
		return err
	}
	next := latest.Snapshot
	next.Messages = append(next.Messages, resumeMessageAt(len(next.Messages)))
	if _, err := w.Append(ctx, latest.Revision, next); err != nil {
		return crashtest.Violate("append-after-resume", "%w", err)
	}
	got, err := st.Load(ctx, rplID)
	if err != nil {
		return crashtest.Violate("append-after-resume", "load: %w", err)
	}
	return want(got, "append-after-resume")
}

// TestResumedAppendSurvivesPowerLoss: with the unkind power-loss model, a
// crash at any sync point of resumes and their first appends (blobs,
// pages, records) never loses an acknowledged revision, and the crashed
// store resumes and appends.
func TestResumedAppendSurvivesPowerLoss(t *testing.T) {
	run := resumePowerWorkload(t, -1)
	points := run.Points()
	require.Greater(t, len(points), 10)
	crashtest.Sweep(t, points, 6, resumePowerCheck)
}
