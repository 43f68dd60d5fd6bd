package storetest

import (
	"context"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Resuming a session (sessionstore.Resume, Writer.Latest): the writer
// returns the revision it holds, and its first small append after a
// resume is stored as a delta where the adapter writes deltas (as its
// appends after the first are: the session's second revision tells),
// whether the caller resumed with Resume, or acquired and loaded apart,
// or appends a snapshot it built anew.

// lastKind returns the kind of session id's last record (Records).
func (f *fixture) lastKind(id session.SessionID) (uint64, string) {
	f.t.Helper()
	var rev uint64
	var kind string
	for info, err := range sessionstore.Records(f.ctx, f.s, id) {
		require.NoError(f.t, err, "Records %s", id)
		rev, kind = info.Revision, info.Kind
	}
	return rev, kind
}

func (f *fixture) requireSameSnap(want, got sessnap.Snapshot, msg string) {
	f.t.Helper()
	w, err := sessnap.Marshal(want)
	require.NoError(f.t, err)
	g, err := sessnap.Marshal(got)
	require.NoError(f.t, err)
	require.Equal(f.t, string(w), string(g), msg)
}

// resumeMessage is the small message of resume i.
func resumeMessage(i int) session.Message {
	return session.TextMessage(session.RoleUser, fmt.Sprintf("resume %d: go on", i), sessiontest.Epoch.Add(time.Duration(i)*time.Second))
}

// checkResumeDelta grows a session with text and content kept out of
// line, then resumes it four ways; each resume's record is the
// revision's, and its first append of one message is a delta where the
// session's second revision was one. A resumed writer whose caller changed
// an earlier message stores the change.
func checkResumeDelta(f *fixture) {
	t := f.t
	const id = "resume"
	s := sessiontest.New(id)
	w := f.createSnap(sessiontest.Snap(t, s))
	f.appendMessage(w, s, session.TextMessage(session.RoleUser, "a first small message", sessiontest.Epoch))
	_, kind := f.lastKind(id)
	deltas := kind == "delta"
	for i := range 6 {
		f.appendMessage(w, s, session.Message{Role: session.RoleTool, Parts: []session.Part{
			{Type: session.PartToolResult, ToolCallID: fmt.Sprintf("call-%d", i), Output: largeText(uint64(i), 20<<10+i)},
			{Type: session.PartText, Text: fmt.Sprintf("result %d", i)},
		}})
	}
	stored := f.appendMessage(w, s, session.TextMessage(session.RoleAssistant, "done", sessiontest.Epoch))
	require.NoError(t, w.Release(f.ctx))

	requireDelta := func(how string) {
		t.Helper()
		rev, kind := f.lastKind(id)
		if deltas {
			require.Equal(t, "delta", kind, "%s: revision %d, the first append after a resume, is not a delta", how, rev)
		}
	}
	release := func(w sessionstore.Writer) {
		t.Helper()
		require.NoError(t, w.Release(f.ctx))
	}

	// 1. Resume: the writer and the latest revision in one call.
	w, rec, err := sessionstore.Resume(f.ctx, f.s, id, sessionstore.AcquireOptions{Label: "resume"})
	require.NoError(t, err)
	f.track(w)
	require.Equal(t, w.Revision(), rec.Revision)
	f.requireSameSnap(stored, rec.Snapshot, "Resume returns the latest revision")
	next := rec.Snapshot
	next.Messages = append(next.Messages, resumeMessage(1))
	f.append(w, w.Revision(), next)
	requireDelta("Resume")
	// Latest after an append is that revision.
	again, err := w.Latest(f.ctx)
	require.NoError(t, err)
	f.requireSameSnap(next, again.Snapshot, "Latest after an append")
	release(w)
	f.requireSameSnap(next, f.load(id).Snapshot, "after Resume and an append")

	// 2. Acquire, then Load apart, then append.
	w = f.acquire(id, "acquire-load")
	rec = f.load(id)
	next = rec.Snapshot
	next.Messages = append(next.Messages, resumeMessage(2))
	f.append(w, w.Revision(), next)
	requireDelta("Acquire and Load")
	release(w)
	f.requireSameSnap(next, f.load(id).Snapshot, "after Acquire, Load and an append")

	// 3. TryAcquire, and a snapshot restored and taken anew (other memory).
	ctx, cancel := context.WithTimeout(f.ctx, waitBound)
	defer cancel()
	w, err = f.s.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "try"})
	require.NoError(t, err)
	f.track(w)
	restored, err := f.load(id).Session()
	require.NoError(t, err)
	next = f.appendMessage(w, restored, resumeMessage(3))
	requireDelta("TryAcquire and a restored session")
	release(w)
	f.requireSameSnap(next, f.load(id).Snapshot, "after TryAcquire and an append")

	// 4. Resume, change an earlier message in place, append: the change
	// is stored (whatever the record's kind).
	w, rec, err = sessionstore.Resume(f.ctx, f.s, id, sessionstore.AcquireOptions{Label: "edit"})
	require.NoError(t, err)
	f.track(w)
	next = rec.Snapshot
	next.Messages[0].Parts[0].Text = "an edited first message"
	next.Messages = append(next.Messages, resumeMessage(4))
	f.append(w, w.Revision(), next)
	release(w)
	f.requireSameSnap(next, f.load(id).Snapshot, "an earlier message changed after Resume")

	// 5. Resume of a session nobody holds but whose holder died.
	f.h.Crash(t, f.s, id)
	ctx, cancel = context.WithTimeout(f.ctx, waitBound)
	defer cancel()
	w, rec, err = sessionstore.Resume(ctx, f.s, id, sessionstore.AcquireOptions{Label: "takeover"})
	require.NoError(t, err)
	f.track(w)
	f.requireSameSnap(next, rec.Snapshot, "Resume after a crash")
	next = rec.Snapshot
	next.Messages = append(next.Messages, resumeMessage(5))
	f.append(w, w.Revision(), next)
	requireDelta("Resume after a crash")
	release(w)
	f.requireSameSnap(next, f.load(id).Snapshot, "after a takeover and an append")
}
