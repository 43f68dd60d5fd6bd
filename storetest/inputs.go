package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

var invalidIDs = []struct {
	name string
	id   session.SessionID
}{
	{"empty", ""},
	{"dot", "."},
	{"dotdot", ".."},
	{"parent path", "../x"},
	{"slash", "a/b"},
	{"absolute", "/etc"},
	{"backslash", `a\b`},
	{"NUL byte", "a\x00b"},
	{"leading dot", ".hidden"},
	{"leading dash", "-x"},
	{"space inside", "a b"},
	{"leading space", " a"},
	{"trailing space", "a "},
	{"newline", "a\nb"},
	{"300 characters", session.SessionID(strings.Repeat("a", 300))},
	{"just over the cap", session.SessionID(strings.Repeat("b", sessionstore.MaxIDLength+1))},
	{"non-ASCII", "séance"},
}

func checkInvalidIDs(f *fixture) {
	t := f.t
	f.create("ok") // a valid session, to fork from
	opts := sessionstore.AcquireOptions{}
	for _, tt := range invalidIDs {
		id := tt.id
		snap := snapIn(t, "placeholder", session.StateIdle)
		snap.ID = id
		_, err := f.s.Create(f.ctx, snap, opts)
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: Create", tt.name)
		_, err = f.s.Acquire(f.ctx, id, opts)
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: Acquire", tt.name)
		_, err = f.s.TryAcquire(f.ctx, id, opts)
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: TryAcquire", tt.name)
		_, err = f.s.Load(f.ctx, id)
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: Load", tt.name)
		_, err = f.s.LoadRevision(f.ctx, id, 1)
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: LoadRevision", tt.name)
		_, err = f.s.Lease(f.ctx, id)
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: Lease", tt.name)
		require.ErrorIs(t, historyErr(f.ctx, f.s, id), sessionstore.ErrInvalidID, "%s: History", tt.name)
		_, err = f.s.Fork(f.ctx, id, 0, "fork-target", opts)
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: Fork from", tt.name)
		if id != "" { // an empty new ID means "mint one"
			_, err = f.s.Fork(f.ctx, "ok", 0, id, opts)
			require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%s: Fork to", tt.name)
		}
	}
	require.Equal(t, []string{"ok"}, ids(f.listAll(summary.Query{})), "a refused ID left something behind")
}

// historyErr returns the error History yields, requiring it to be the
// only and last item.
func historyErr(ctx context.Context, s sessionstore.Store, id session.SessionID) error {
	var last error
	n := 0
	for _, err := range s.History(ctx, id) {
		n++
		last = err
		if n > 1000 {
			break
		}
	}
	if n != 1 {
		return &unexpectedHistory{n}
	}
	return last
}

type unexpectedHistory struct{ n int }

func (e *unexpectedHistory) Error() string {
	return "History yielded " + strings.Repeat("*", min(e.n, 10)) + " items where one error was expected"
}

// bigSnap is a valid snapshot whose record would exceed
// DefaultMaxRecordBytes by a little: a tool call whose input (JSON, which
// no store keeps out of line, unlike large texts and data) is that large.
func bigSnap(t *testing.T, id string) sessnap.Snapshot {
	t.Helper()
	s := sessiontest.New(id)
	input := `"` + strings.Repeat("x", sessionstore.DefaultMaxRecordBytes+1) + `"`
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleAssistant, Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: "c1", Name: "write", Input: []byte(input)}}}))
	return sessiontest.Snap(t, s)
}

func checkOversized(f *fixture) {
	t := f.t
	big := bigSnap(t, "huge")
	_, err := f.s.Create(f.ctx, big, sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrTooLarge, "Create")
	_, err = f.s.Load(f.ctx, "huge")
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "a refused Create left a session behind")

	w := f.create("fits")
	before := f.load("fits")
	big.ID = "fits"
	_, err = w.Append(f.ctx, 1, big)
	require.ErrorIs(t, err, sessionstore.ErrTooLarge, "Append")
	after := f.load("fits")
	require.Equal(t, uint64(1), after.Revision, "a refused Append wrote something")
	requireSameSnap(t, before.Snapshot, after.Snapshot)
	require.Len(t, f.history("fits"), 1)
	require.Equal(t, []string{"fits"}, ids(f.listAll(summary.Query{})))

	// The writer stays usable.
	f.append(w, 1, stepSnap(t, "fits", 2))
}

func checkMismatchedID(f *fixture) {
	t := f.t
	w := f.create("mine")
	f.create("theirs")
	for _, other := range []session.SessionID{"theirs", "nobody", ""} {
		snap := stepSnap(t, "mine", 2)
		snap.ID = other
		_, err := w.Append(f.ctx, 1, snap)
		require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot, "snapshot of %q appended to mine", other)
	}
	require.Equal(t, uint64(1), f.load("mine").Revision)
	require.Equal(t, uint64(1), f.load("theirs").Revision)
	f.append(w, 1, stepSnap(t, "mine", 2))
}

// invalidSnapshots are snapshots the store must refuse, each a
// modification of a valid idle snapshot.
var invalidSnapshots = []struct {
	name string
	edit func(*sessnap.Snapshot)
}{
	{"unknown state", func(s *sessnap.Snapshot) { s.State = "sleeping" }},
	{"empty state", func(s *sessnap.Snapshot) { s.State = "" }},
	{"authority out of order", func(s *sessnap.Snapshot) {
		s.Authority = &session.Authority{Capabilities: []string{session.CapFilesWrite, session.CapFilesRead}}
	}},
	{"authority with unknown capability", func(s *sessnap.Snapshot) {
		s.Authority = &session.Authority{Capabilities: []string{"root.everything"}}
	}},
	{"empty authority", func(s *sessnap.Snapshot) { s.Authority = &session.Authority{} }},
	{"missing environment ref", func(s *sessnap.Snapshot) { s.EnvironmentRef = session.EnvironmentRef{} }},
	{"environment ref without revision", func(s *sessnap.Snapshot) { s.EnvironmentRef.Revision = "" }},
	{"missing created_at", func(s *sessnap.Snapshot) { s.CreatedAt = time.Time{} }},
	{"unsupported format", func(s *sessnap.Snapshot) { s.Format = "sessnap/v99" }},
	{"unknown kind", func(s *sessnap.Snapshot) { s.Kind = "robot" }},
	{"unknown mode", func(s *sessnap.Snapshot) { s.Mode = "yolo" }},
	{"awaiting without pending ask", func(s *sessnap.Snapshot) { s.State = session.StateAwaiting }},
	{"pending ask while idle", func(s *sessnap.Snapshot) {
		s.Pending = &session.PendingAsk{ID: "a", ToolCallID: "c", Tool: "t", Input: json.RawMessage(`{}`), AskedAt: sessiontest.Epoch}
	}},
	{"stop reason while idle", func(s *sessnap.Snapshot) { s.StopReason = session.StopUserStop }},
	{"non-UTC created_at", func(s *sessnap.Snapshot) { s.CreatedAt = s.CreatedAt.In(time.FixedZone("X", 3600)) }},
	{"title not UTF-8", func(s *sessnap.Snapshot) { s.Title = "bad \xff title" }},
	{"negative counter", func(s *sessnap.Snapshot) { s.Counters.Turns = -1 }},
}

func checkInvalidSnapshots(f *fixture) {
	t := f.t
	w := f.create("target")
	before := f.load("target")
	for i, tt := range invalidSnapshots {
		id := session.SessionID("bad-" + strings.Repeat("x", i))
		snap := snapIn(t, string(id), session.StateIdle)
		tt.edit(&snap)
		_, err := f.s.Create(f.ctx, snap, sessionstore.AcquireOptions{})
		require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot, "%s: Create", tt.name)
		_, err = f.s.Load(f.ctx, id)
		require.ErrorIs(t, err, sessionstore.ErrNotFound, "%s: a refused Create left a session behind", tt.name)

		snap = snapIn(t, "target", session.StateIdle)
		tt.edit(&snap)
		_, err = w.Append(f.ctx, 1, snap)
		require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot, "%s: Append", tt.name)
	}
	after := f.load("target")
	require.Equal(t, uint64(1), after.Revision, "a refused Append wrote something")
	requireSameSnap(t, before.Snapshot, after.Snapshot)
	require.Equal(t, []string{"target"}, ids(f.listAll(summary.Query{})))
	// The writer stays usable.
	f.append(w, 1, stepSnap(t, "target", 2))
}

func checkUnknownID(f *fixture) {
	t := f.t
	f.create("known")
	opts := sessionstore.AcquireOptions{}
	ctx, cancel := context.WithTimeout(f.ctx, waitBound)
	defer cancel()
	const id = session.SessionID("unknown")

	_, err := f.s.Load(ctx, id)
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "Load")
	_, err = f.s.LoadRevision(ctx, id, 1)
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "LoadRevision")
	require.ErrorIs(t, historyErr(ctx, f.s, id), sessionstore.ErrNotFound, "History")
	_, err = f.s.Acquire(ctx, id, opts)
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "Acquire")
	_, err = f.s.TryAcquire(ctx, id, opts)
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "TryAcquire")
	_, err = f.s.Lease(ctx, id)
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "Lease")
	_, err = f.s.Fork(ctx, id, 0, "fork", opts)
	require.ErrorIs(t, err, sessionstore.ErrNotFound, "Fork")
	require.Contains(t, err.Error(), string(id), "errors name the session")

	require.Equal(t, []string{"known"}, ids(f.listAll(summary.Query{})), "a lookup of an unknown ID created it")
}
