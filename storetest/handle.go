package storetest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// The session handle (sessionstore.Handle): an agent's turn in Add calls
// that never meet an illegal transition, an ID for every message, a
// rewind in place and a fork at a message, on every adapter.

// turn returns an agent's whole turn: a prompt, a tool call with its
// usage, the tool's result, the answer with its usage.
func turn(i int) []session.Message {
	call := fmt.Sprintf("call-%d", i)
	return []session.Message{
		session.TextMessage(session.RoleUser, fmt.Sprintf("prompt %d: list the files", i), sessiontest.Epoch),
		{Role: session.RoleAssistant, Usage: &session.Usage{InputTokens: 100, OutputTokens: 10}, Parts: []session.Part{
			{Type: session.PartToolCall, ToolCallID: call, Name: "ls", Input: json.RawMessage(`{"dir":"."}`)},
		}},
		{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: call, Output: "a.go\nb.go"}}},
		{Role: session.RoleAssistant, Usage: &session.Usage{InputTokens: 200, OutputTokens: 20}, Parts: []session.Part{
			{Type: session.PartText, Text: fmt.Sprintf("answer %d: two files", i)},
		}},
	}
}

// checkHandleTurns adds two agents' turns message by message, each Add
// durable, across a resume in between: the lifecycle follows (a turn per
// prompt, tool calls and usage counted once, idle after each answer),
// the first prompt titles the session, every message has an ID that a
// reload keeps, and the appends after the first are deltas where the
// adapter writes them.
func checkHandleTurns(f *fixture) {
	t := f.t
	h, err := sessionstore.Open(f.ctx, f.s, "handle", sessionstore.HandleOptions{Acquire: sessionstore.AcquireOptions{Label: "agent"}})
	require.NoError(t, err)
	for _, m := range turn(1) {
		_, err := h.Add(f.ctx, m)
		require.NoError(t, err, "Add %s", m.Role)
	}
	_, deltaKind := f.lastKind("handle")
	require.NoError(t, h.Close(f.ctx))

	h, err = sessionstore.Open(f.ctx, f.s, "handle", sessionstore.HandleOptions{})
	require.NoError(t, err, "Open resumes an existing session")
	require.Equal(t, uint64(5), h.Revision())
	rev, err := h.Add(f.ctx, turn(2)...)
	require.NoError(t, err)
	require.Equal(t, uint64(6), rev, "one Add is one revision")
	if deltaKind == "delta" {
		_, kind := f.lastKind("handle")
		require.Equal(t, "delta", kind, "an Add after a resume is a delta")
	}
	require.NoError(t, h.Close(f.ctx))

	rec, err := f.s.Load(f.ctx, "handle")
	require.NoError(t, err)
	s, err := rec.Session()
	require.NoError(t, err)
	require.Equal(t, session.StateIdle, s.State(), "an answer without tool calls ends the turn")
	require.Equal(t, session.Counters{Turns: 2, ToolCalls: 2}, s.Counters())
	require.Equal(t, session.Usage{InputTokens: 600, OutputTokens: 60}, s.Usage(), "each message's usage counted once")
	title, prov := s.Title()
	require.Equal(t, "prompt 1: list the files", title)
	require.Equal(t, session.TitleFirstPrompt, prov)
	seen := map[string]bool{}
	for i, m := range rec.Snapshot.Messages {
		require.True(t, strings.HasPrefix(m.ID, "msg_"), "message %d has an assigned ID, got %q", i, m.ID)
		require.False(t, seen[m.ID], "message ID %s twice", m.ID)
		seen[m.ID] = true
	}
}

// checkHandleKeepsIDs: a caller's message IDs are kept, a duplicate is
// refused and writes nothing, and a message stored without an ID (by a
// writer that gave none) reads with its position's ID.
func checkHandleKeepsIDs(f *fixture) {
	t := f.t
	s := sessiontest.New("ids")
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "stored without an ID", sessiontest.Epoch)))
	w := f.createSnap(sessiontest.Snap(t, s))
	h, err := sessionstore.Hold(f.ctx, w)
	require.NoError(t, err)
	m := session.TextMessage(session.RoleUser, "mine", sessiontest.Epoch)
	m.ID = "caller-1"
	_, err = h.Add(f.ctx, m)
	require.NoError(t, err)
	_, err = h.Add(f.ctx, m)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot, "a duplicate ID is refused")
	require.Equal(t, uint64(2), h.Revision(), "nothing written")
	require.NoError(t, h.Close(f.ctx))

	rec, err := f.s.Load(f.ctx, "ids")
	require.NoError(t, err)
	conv := rec.Snapshot.Messages
	require.Len(t, conv, 2)
	require.Equal(t, "m1", session.MessageIDAt(conv, 0), "a message stored without an ID reads with its position's")
	require.Equal(t, "caller-1", session.MessageIDAt(conv, 1))
}

// checkHandleRewind rewinds in place to a count and to a message ID, and
// pops: each is a new revision whose conversation is the prefix, idle,
// with the older revisions (and their messages) still in the history and
// forkable; adding after a rewind continues from the prefix.
func checkHandleRewind(f *fixture) {
	t := f.t
	h, err := sessionstore.Open(f.ctx, f.s, "rewind", sessionstore.HandleOptions{})
	require.NoError(t, err)
	_, err = h.Add(f.ctx, turn(1)...)
	require.NoError(t, err)
	// A prompt whose turn is still running when the rewind comes.
	full, err := h.Add(f.ctx, turn(2)[:2]...)
	require.NoError(t, err)
	require.Equal(t, session.StateRunning, h.Snapshot().State)
	ids := make([]string, 0, 6)
	for _, m := range h.Snapshot().Messages {
		ids = append(ids, m.ID)
	}

	n, ok := session.MessagePoint(h.Snapshot().Messages, ids[2])
	require.True(t, ok)
	require.Equal(t, 3, n)
	rev, err := h.Rewind(f.ctx, n)
	require.NoError(t, err)
	require.Equal(t, full+1, rev)
	m, ok, err := h.Pop(f.ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ids[2], m.ID, "Pop returns the last message")
	_, err = h.Rewind(f.ctx, 7)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot, "a point beyond the conversation")
	_, err = h.Add(f.ctx, session.TextMessage(session.RoleUser, "again", sessiontest.Epoch))
	require.NoError(t, err)
	require.NoError(t, h.Close(f.ctx))

	rec, err := f.s.Load(f.ctx, "rewind")
	require.NoError(t, err)
	require.Equal(t, full+3, rec.Revision)
	got := rec.Snapshot.Messages
	require.Len(t, got, 3)
	require.Equal(t, ids[:2], []string{got[0].ID, got[1].ID}, "the prefix keeps its IDs")
	require.NotContains(t, ids, got[2].ID, "a message added after a rewind has a new ID")
	require.Equal(t, session.StateRunning, rec.Snapshot.State, "the new prompt's turn")

	rewound, err := f.s.LoadRevision(f.ctx, "rewind", full+1)
	require.NoError(t, err)
	require.Len(t, rewound.Snapshot.Messages, 3)
	require.Equal(t, session.StateIdle, rewound.Snapshot.State, "a rewind ends the running turn")
	old, err := f.s.LoadRevision(f.ctx, "rewind", full)
	require.NoError(t, err)
	require.Len(t, old.Snapshot.Messages, 6, "the revision before the rewind keeps every message")
	fw, err := f.s.Fork(f.ctx, "rewind", full, "", sessionstore.AcquireOptions{})
	require.NoError(t, err, "the revision before the rewind can be forked")
	f.track(fw)
	require.NoError(t, fw.Release(f.ctx))
}

// checkForkAtMessage forks a running session at a message (by count and
// by ID): the fork's conversation is the prefix with its IDs, it is idle,
// titled after its parent, its relationship says fork of the parent at
// that message (not a sub-agent), and the parent is untouched. A point
// that names no message is ErrNotFound and creates nothing.
func checkForkAtMessage(f *fixture) {
	t := f.t
	h, err := sessionstore.Open(f.ctx, f.s, "parent", sessionstore.HandleOptions{})
	require.NoError(t, err)
	_, err = h.Add(f.ctx, turn(1)...)
	require.NoError(t, err)
	_, err = h.Add(f.ctx, turn(2)[:2]...)
	require.NoError(t, err)
	parent := h.Snapshot()
	require.NoError(t, h.Close(f.ctx))

	for _, at := range []string{"3", parent.Messages[2].ID} {
		fk, err := sessionstore.ForkAt(f.ctx, f.s, "parent", at, "", sessionstore.AcquireOptions{})
		require.NoError(t, err, "fork at %s", at)
		id := fk.ID()
		require.NoError(t, fk.Close(f.ctx))
		rec, err := f.s.Load(f.ctx, id)
		require.NoError(t, err)
		snap := rec.Snapshot
		require.Len(t, snap.Messages, 3)
		for i := range 3 {
			require.Equal(t, parent.Messages[i].ID, snap.Messages[i].ID, "a fork keeps the message IDs")
		}
		require.Equal(t, session.StateIdle, snap.State, "a fork is idle")
		require.Equal(t, parent.Title, snap.Title, "a fork is titled after its parent")
		require.Equal(t, session.SessionRelationship{ParentID: "parent", RootID: "parent", ForkedAt: parent.Messages[2].ID}, snap.Relationship)
		require.Equal(t, parent.Kind, snap.Kind, "a fork is not a sub-agent")
	}
	_, err = sessionstore.ForkAt(f.ctx, f.s, "parent", "no-such-message", "nofork", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	_, err = f.s.Load(f.ctx, "nofork")
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "a refused fork creates nothing")
	rec, err := f.s.Load(f.ctx, "parent")
	require.NoError(t, err)
	require.Len(t, rec.Snapshot.Messages, 6, "the parent is untouched")
	require.Equal(t, session.StateRunning, rec.Snapshot.State)
}

// checkHandleRewindsAndResumes: adds, rewinds and pops in a row, with the
// handle closed and the session resumed by a new one now and then, leave
// every revision with the conversation the calls made (Load of each, in
// a store opened again), and a message added after a rewind never takes
// an ID the session held before.
func checkHandleRewindsAndResumes(f *fixture) {
	t := f.t
	h, err := sessionstore.Open(f.ctx, f.s, "rewinds", sessionstore.HandleOptions{})
	require.NoError(t, err)
	type state struct {
		rev uint64
		ids []string
	}
	var want []state
	idsOf := func() []string {
		var ids []string
		for _, m := range h.Snapshot().Messages {
			ids = append(ids, m.ID)
		}
		return ids
	}
	for step := range 40 {
		var rev uint64
		switch n := len(h.Snapshot().Messages); {
		case step%7 == 3 && n > 2:
			rev, err = h.Rewind(f.ctx, n-2)
		case step%5 == 4 && n > 0:
			_, _, err = h.Pop(f.ctx)
			rev = h.Revision()
		default:
			rev, err = h.Add(f.ctx, session.TextMessage(session.RoleUser, fmt.Sprintf("prompt %d", step), sessiontest.Epoch),
				session.TextMessage(session.RoleAssistant, fmt.Sprintf("answer %d", step), sessiontest.Epoch))
		}
		require.NoError(t, err, "step %d", step)
		ids := idsOf()
		want = append(want, state{rev, ids})
		if step%9 == 8 {
			require.NoError(t, h.Close(f.ctx))
			h, err = sessionstore.Open(f.ctx, f.s, "rewinds", sessionstore.HandleOptions{})
			require.NoError(t, err)
			require.Equal(t, ids, idsOf(), "step %d: the resumed handle", step)
		}
	}
	require.NoError(t, h.Close(f.ctx))
	all := map[string]int{}
	for _, w := range want {
		rec, err := f.s.LoadRevision(f.ctx, "rewinds", w.rev)
		require.NoError(t, err, "revision %d", w.rev)
		var got []string
		for _, m := range rec.Snapshot.Messages {
			got = append(got, m.ID)
		}
		require.Equal(t, w.ids, got, "revision %d", w.rev)
		for i, id := range got {
			if at, ok := all[id]; ok {
				require.Equal(t, i, at, "ID %s names one message at one place in every revision", id)
			}
			all[id] = i
		}
	}
}
