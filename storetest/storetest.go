package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Harness is what an adapter gives the suite.
type Harness struct {
	// New returns a fresh, empty store with the default record size cap.
	// The suite closes it in t.Cleanup (unless the check closed it). Each
	// check gets its own store; checks run in parallel.
	New func(t *testing.T) sessionstore.Store

	// Supersede makes the current holder of id lose its lease, as when
	// another process took it over, the lease expired or the lock file was
	// replaced: the holder's later Append and Heartbeat must fail with
	// ErrLeaseLost, and the next acquirer must see the previous lease as
	// stale. Required.
	Supersede func(t *testing.T, s sessionstore.Store, id session.SessionID)

	// Crash makes a holder of session id die without releasing the lease,
	// as a killed process does: it takes the lease, free when Crash is
	// called, in a holder of its own — in another process, where the
	// adapter's leases reach across processes, which it then kills
	// (SIGKILL) — and returns once that holder is dead. The holder writes
	// no record. Readers must then see the lease stale within a few
	// seconds: at once for a lease that rests on a kernel lock, when it
	// expires for one with a time to live (which the harness keeps short
	// for its dead holders). Required.
	Crash func(t *testing.T, s sessionstore.Store, id session.SessionID)

	// Damage makes session id's records unreadable, as damage outside the
	// store's control would (a file store's log deleted). Optional: an
	// adapter whose records cannot be damaged that way leaves it nil, and
	// the checks that need it skip.
	Damage func(t *testing.T, s sessionstore.Store, id session.SessionID)

	// Open returns another handle on s's sessions, as another process
	// opens them (a file store's directory opened again, a database's
	// DSN), and closes it when the test ends. Optional: nil means s
	// itself (a store in memory has no other handle).
	Open func(t *testing.T, s sessionstore.Store) sessionstore.Store

	// InlineContent says that the store keeps all part content in its
	// records, however large (jsonlstore with FullRecordsOnly): then
	// sessions are bound by the record cap, and the checks of content
	// kept out of line check only that it reads back whole.
	InlineContent bool
}

// Run runs the conformance suite against the adapter h describes: every
// contract check as a parallel subtest on a fresh store.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Supersede == nil || h.Crash == nil {
		t.Fatal("storetest: Harness.New, Harness.Supersede and Harness.Crash are required")
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(newFixture(t, h))
		})
	}
}

// waitBound bounds every wait in the suite: a correct store answers far
// sooner; a broken one fails the check instead of hanging the run.
const waitBound = 5 * time.Second

// checkBound bounds a whole check, so that a hang fails one check rather
// than the whole run. It is generous: the size checks encode tens of MiB,
// which under -race on a busy two-core machine takes over a minute.
const checkBound = 5 * time.Minute

// fixture is one check's store and helpers.
type fixture struct {
	t      *testing.T
	h      Harness
	s      sessionstore.Store
	ctx    context.Context
	closed bool
}

func newFixture(t *testing.T, h Harness) *fixture {
	// Every call gets a context with a deadline far beyond what any check
	// needs, so a store that blocks where it must not fails the check
	// instead of hanging the run.
	ctx, cancel := context.WithTimeout(t.Context(), checkBound)
	t.Cleanup(cancel)
	f := &fixture{t: t, h: h, ctx: ctx}
	f.s = h.New(t)
	require.NotNil(t, f.s, "Harness.New returned nil")
	t.Cleanup(func() {
		if !f.closed {
			require.NoError(t, f.s.Close(), "closing the store")
		}
	})
	return f
}

// close closes the store now (the cleanup then skips it).
func (f *fixture) close() {
	f.t.Helper()
	f.closed = true
	require.NoError(f.t, f.s.Close())
}

// track releases w when the check ends, before the store is closed
// (cleanups run last-registered first).
func (f *fixture) track(w sessionstore.Writer) sessionstore.Writer {
	f.t.Cleanup(func() { _ = w.Release(context.Background()) })
	return w
}

// create creates session id (an idle session with one message) and
// returns its writer.
func (f *fixture) create(id string) sessionstore.Writer {
	f.t.Helper()
	return f.createSnap(snapIn(f.t, id, session.StateIdle))
}

func (f *fixture) createSnap(snap sessnap.Snapshot) sessionstore.Writer {
	f.t.Helper()
	return f.createLabel(snap, "storetest")
}

func (f *fixture) createLabel(snap sessnap.Snapshot, label string) sessionstore.Writer {
	f.t.Helper()
	w, err := f.s.Create(f.ctx, snap, sessionstore.AcquireOptions{Label: label})
	require.NoError(f.t, err, "Create %s", snap.ID)
	require.NotNil(f.t, w)
	return f.track(w)
}

// acquire takes id's lease, bounded by waitBound.
func (f *fixture) acquire(id session.SessionID, label string) sessionstore.Writer {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, waitBound)
	defer cancel()
	w, err := f.s.Acquire(ctx, id, sessionstore.AcquireOptions{Label: label})
	require.NoError(f.t, err, "Acquire %s", id)
	return f.track(w)
}

// fork forks revision rev of from as newID and returns the fork's writer.
func (f *fixture) fork(from session.SessionID, rev uint64, newID session.SessionID) sessionstore.Writer {
	f.t.Helper()
	w, err := f.s.Fork(f.ctx, from, rev, newID, sessionstore.AcquireOptions{})
	require.NoError(f.t, err, "Fork %s", from)
	return f.track(w)
}

// append appends snap at expected and requires revision expected+1.
func (f *fixture) append(w sessionstore.Writer, expected uint64, snap sessnap.Snapshot) uint64 {
	f.t.Helper()
	rev, err := w.Append(f.ctx, expected, snap)
	require.NoError(f.t, err, "Append %s at %d", w.ID(), expected)
	require.Equal(f.t, expected+1, rev)
	return rev
}

// appendSteps appends n revisions titled "step 1"… and returns the
// snapshots appended.
func (f *fixture) appendSteps(w sessionstore.Writer, n int) []sessnap.Snapshot {
	f.t.Helper()
	var out []sessnap.Snapshot
	for i := range n {
		snap := stepSnap(f.t, w.ID(), i+1)
		f.append(w, w.Revision(), snap)
		out = append(out, snap)
	}
	return out
}

func (f *fixture) load(id session.SessionID) sessionstore.Record {
	f.t.Helper()
	rec, err := f.s.Load(f.ctx, id)
	require.NoError(f.t, err, "Load %s", id)
	return rec
}

func (f *fixture) history(id session.SessionID) []sessionstore.Record {
	f.t.Helper()
	var out []sessionstore.Record
	for rec, err := range f.s.History(f.ctx, id) {
		require.NoError(f.t, err, "History %s", id)
		out = append(out, rec)
	}
	return out
}

func (f *fixture) lease(id session.SessionID) summary.LeaseStatus {
	f.t.Helper()
	st, err := f.s.Lease(f.ctx, id)
	require.NoError(f.t, err, "Lease %s", id)
	return st
}

// listAll pages through q (limit per page as given) and returns every item.
func (f *fixture) listAll(q summary.Query) []summary.Summary {
	f.t.Helper()
	var all []summary.Summary
	for range 100_000 {
		p, err := f.s.List(f.ctx, q)
		require.NoError(f.t, err, "List")
		require.Empty(f.t, p.Unreadable, "List reports unreadable sessions in a store where every session reads")
		all = append(all, p.Items...)
		if p.Next == "" {
			return all
		}
		require.NotEmpty(f.t, p.Items, "a page with a Next cursor is empty")
		q.Cursor = p.Next
	}
	f.t.Fatal("paging did not end")
	return nil
}

// ids returns the IDs of summaries, as strings.
func ids(items []summary.Summary) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = string(s.ID)
	}
	return out
}

// --- snapshots -----------------------------------------------------------

// snapIn is the snapshot of a session called id in state st.
func snapIn(t *testing.T, id string, st session.State) sessnap.Snapshot {
	t.Helper()
	return sessiontest.Snap(t, sessiontest.InState(id, st))
}

// stepSnap is a distinct idle snapshot of id for step n: its title names
// the step, so each revision's content is identifiable.
func stepSnap(t *testing.T, id session.SessionID, n int) sessnap.Snapshot {
	t.Helper()
	return sessiontest.Snap(t, sessiontest.Titled(string(id), fmt.Sprintf("step %d", n)))
}

// configured returns the snapshot of a fresh session built from
// sessiontest.Config(id) adjusted by edit.
func configured(t *testing.T, id string, edit func(*session.Config)) sessnap.Snapshot {
	t.Helper()
	cfg := sessiontest.Config(id)
	edit(&cfg)
	s, err := session.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "hello", sessiontest.Epoch)))
	return sessiontest.Snap(t, s)
}

// richSnap is a snapshot with every kind of shared memory a careless
// adapter could leak: message slices, tool-call JSON, blob bytes, a map of
// labels, string slices, pointers (authority, usage, pending ask).
func richSnap(t *testing.T, id string) sessnap.Snapshot {
	t.Helper()
	cfg := sessiontest.Config(id)
	cfg.Placement = session.PlacementMetadata{Host: "box", Labels: map[string]string{"zone": "a", "tier": "gold"}}
	cfg.DebugMCPServers = []string{"srv-a", "srv-b"}
	cfg.DebugMCPTools = []string{"tool-a"}
	cfg.Authority = &session.Authority{Capabilities: []string{session.CapFilesRead, session.CapFilesWrite}}
	s, err := session.New(cfg)
	require.NoError(t, err)
	at := sessiontest.Epoch.Add(time.Second)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "look at this", at)))
	require.NoError(t, s.BeginTurn())
	require.NoError(t, s.AddUsage(session.Usage{InputTokens: 10, OutputTokens: 5}))
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleAssistant, Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: "c1", Name: "read", Input: json.RawMessage(`{"path":"a.go"}`)},
	}}))
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "c1", Output: "package a"},
		{Type: session.PartBlob, MediaType: "application/octet-stream", Data: []byte{0, 1, 2, 0xff}},
	}}))
	require.NoError(t, s.PauseForApproval(session.PendingAsk{
		ID: "ask-1", ToolCallID: "c2", Tool: "write", Input: json.RawMessage(`{"path":"a.go"}`), Reason: "writes", AskedAt: at,
	}))
	return sessiontest.Snap(t, s)
}

// mutate changes everything reachable from snap through a reference
// (slices, maps, pointers), as a careless caller would.
func mutate(snap *sessnap.Snapshot) {
	for i := range snap.Messages {
		for j := range snap.Messages[i].Parts {
			p := &snap.Messages[i].Parts[j]
			p.Text += " (mutated)"
			for k := range p.Data {
				p.Data[k] ^= 0xff
			}
			for k := range p.Input {
				if p.Input[k] == 'a' {
					p.Input[k] = 'b'
				}
			}
		}
	}
	for k := range snap.Placement.Labels {
		snap.Placement.Labels[k] = "mutated"
	}
	if snap.Placement.Labels != nil {
		snap.Placement.Labels["added"] = "mutated"
	}
	for i := range snap.DebugMCPServers {
		snap.DebugMCPServers[i] = "mutated"
	}
	for i := range snap.DebugMCPTools {
		snap.DebugMCPTools[i] = "mutated"
	}
	if snap.Authority != nil && len(snap.Authority.Capabilities) > 0 {
		snap.Authority.Capabilities[0] = "mutated"
	}
	if snap.Usage != nil {
		snap.Usage.InputTokens = 999_999
	}
	if snap.Pending != nil {
		snap.Pending.Tool = "mutated"
		for k := range snap.Pending.Input {
			snap.Pending.Input[k] = ' '
		}
	}
}

// encode is the canonical encoding of snap, for comparing snapshots.
func encode(t *testing.T, snap sessnap.Snapshot) string {
	t.Helper()
	if snap.Format == "" {
		snap.Format = sessnap.Format
	}
	b, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	return string(b)
}

// requireSameSnap requires two snapshots to encode identically.
func requireSameSnap(t *testing.T, want, got sessnap.Snapshot, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, encode(t, want), encode(t, got), msgAndArgs...)
}

// --- waiting -------------------------------------------------------------

// within runs fn in a goroutine and fails the check if it does not return
// within waitBound.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s did not return within %s", what, waitBound)
	}
}
