package storetest

import (
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// Message IDs of a writer that gives none (Writer.Append of snapshots of
// a session.Session): every ID names one message in the session's whole
// history, on every adapter.

// checkRawRewindIDs appends messages without IDs, rewinds and appends
// again, in one writer and then in a writer resumed on another handle of
// the store: a session that only grew stores its messages without IDs
// (they read with their positions'), and a message appended where a
// dropped one was gets an ID that no revision of the history uses for
// another message.
func checkRawRewindIDs(f *fixture) {
	t := f.t
	const id = "raw-ids"
	msg := func(text string) session.Message {
		return session.TextMessage(session.RoleUser, text, sessiontest.Epoch)
	}
	s := sessiontest.New(id)
	w := f.createSnap(sessiontest.Snap(t, s))
	for i := range 3 {
		f.appendMessage(w, s, msg(fmt.Sprintf("grown %d", i)))
	}
	for i, m := range f.load(id).Snapshot.Messages {
		require.Empty(t, m.ID, "a session that only grew stores message %d as it was given", i)
	}

	// A rewind in the same writer, then a message in a dropped one's place.
	require.NoError(t, s.Truncate(1, true))
	f.append(w, w.Revision(), sessiontest.Snap(t, s))
	f.appendMessage(w, s, msg("after the first rewind"))
	// A rewind that drops it again, and the writer gone.
	require.NoError(t, s.Truncate(1, true))
	f.append(w, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, w.Release(f.ctx))

	// A new process: another handle on the store resumes the session.
	o := f.other()
	w2, rec, err := sessionstore.Resume(f.ctx, o, id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	w2 = f.track(w2)
	rs, err := rec.Session()
	require.NoError(t, err)
	f.appendMessage(w2, rs, msg("after the resume"))
	f.appendMessage(w2, rs, msg("and one more"))
	require.NoError(t, w2.Release(f.ctx))

	// Every ID names one message (its text) at one position in every
	// revision of the history.
	type place struct {
		text string
		at   int
	}
	seen := map[string]place{}
	revs := 0
	for rec, err := range f.s.History(f.ctx, id) {
		require.NoError(t, err)
		revs++
		conv := rec.Snapshot.Messages
		for i := range conv {
			mid := session.MessageIDAt(conv, i)
			p := place{conv[i].Parts[0].Text, i}
			if was, ok := seen[mid]; ok {
				require.Equal(t, was, p, "revision %d: ID %s names another message than in an earlier revision", rec.Revision, mid)
			}
			seen[mid] = p
		}
	}
	require.Equal(t, 9, revs)
	last := f.load(id).Snapshot.Messages
	require.Len(t, last, 3)
	require.Equal(t, "m1", session.MessageIDAt(last, 0), "the message kept reads with its position's ID")
	for i := 1; i < 3; i++ {
		require.NotEmpty(t, last[i].ID, "message %d appended after a resume has an ID of its own", i)
		require.Equal(t, rs.Conversation()[i].ID, last[i].ID, "the writer's session holds the ID stored")
	}
}
