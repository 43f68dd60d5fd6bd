package sessnap_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// roundTrip checks Of → Marshal → Unmarshal → Restore → Of gives the same
// bytes, and that the restored session behaves the same (same state, same
// pending ask, same recorded stop reason).
func roundTrip(t testing.TB, s *session.Session) {
	t.Helper()
	b1, err := sessnap.Encode(s)
	require.NoError(t, err)
	snap, err := sessnap.Unmarshal(b1)
	require.NoError(t, err)
	r, err := snap.Restore()
	require.NoError(t, err, "restore of %s", b1)
	b2, err := sessnap.Encode(r)
	require.NoError(t, err)
	require.Equal(t, string(b1), string(b2))
	require.Equal(t, s.State(), r.State())
	require.Equal(t, s.RecordedStopReason(), r.RecordedStopReason())
	require.Equal(t, s.StopReason(), r.StopReason())
	require.Equal(t, s.Usage(), r.Usage())
	require.Equal(t, s.Counters(), r.Counters())
	require.Equal(t, s.Labels(), r.Labels())
	require.Equal(t, s.Workspace(), r.Workspace())
	require.Equal(t, s.Origin(), r.Origin())
	c1, c2 := s.Conversation(), r.Conversation()
	require.Len(t, c2, len(c1))
	for i := range c1 {
		require.True(t, c1[i].Equal(c2[i]), "message %d", i)
	}
	a1, e1 := s.PendingAsk()
	a2, e2 := r.PendingAsk()
	require.Equal(t, e1, e2)
	require.Equal(t, a1, a2)
}

// walk drives a fresh session through n random actions from seed, checking
// the round trip after every accepted action and that rejected actions
// change nothing.
func walk(t testing.TB, seed uint64, n int) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := sessiontest.New("walk")
	at := sessiontest.Epoch
	for i := range n {
		at = at.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
		before, err := sessnap.Encode(s)
		require.NoError(t, err)
		step := sessiontest.Step
		if r.IntN(3) == 0 {
			step = sessiontest.StepSchema2
		}
		name, err := step(s, r, at)
		after, err2 := sessnap.Encode(s)
		require.NoError(t, err2)
		if err != nil {
			require.Equal(t, string(before), string(after), "step %d: rejected %s changed the session: %v", i, name, err)
			continue
		}
		roundTrip(t, s)
	}
}

// TestRoundTripRandomWalks is the property test: with fixed seeds, sessions
// driven through random sequences of actions survive the round trip
// unchanged at every step, in every reachable state.
func TestRoundTripRandomWalks(t *testing.T) {
	reached := map[session.State]bool{}
	for seed := range uint64(300) {
		walk(t, seed, 60)
		// Record which final states the walks reach, to prove coverage.
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		s := sessiontest.New("walk")
		for range 60 {
			_, _ = sessiontest.Step(s, r, sessiontest.Epoch)
			reached[s.State()] = true
		}
	}
	for _, st := range session.States {
		require.True(t, reached[st], "random walks never reached %s", st)
	}
}

func TestRoundTripEveryState(t *testing.T) {
	for _, st := range session.States {
		t.Run(string(st), func(t *testing.T) { roundTrip(t, sessiontest.InState("s-"+string(st), st)) })
	}
}

// FuzzRoundTrip drives sessions with fuzzer-chosen seeds.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40, 7, 2026, 1<<63 + 5} {
		f.Add(s, uint8(40))
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		walk(t, seed, int(n))
	})
}

// FuzzUnmarshal never panics, and whatever decodes and restores re-encodes
// stably.
func FuzzUnmarshal(f *testing.F) {
	entries, err := os.ReadDir(fixtureDir)
	require.NoError(f, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := sessnap.Unmarshal(data)
		if err != nil {
			return
		}
		// A decoded snapshot that is encodable marshals stably.
		if b1, err := sessnap.Marshal(snap); err == nil {
			snap2, err := sessnap.Unmarshal(b1)
			require.NoError(t, err)
			b2, err := sessnap.Marshal(snap2)
			require.NoError(t, err)
			require.Equal(t, string(b1), string(b2))
		}
		s, err := snap.Restore()
		if err != nil {
			return
		}
		b1, err := sessnap.Encode(s)
		if err != nil {
			return // e.g. an integer beyond 2^53-1 that decoded into int64
		}
		s2, err := sessnap.Decode(b1)
		require.NoError(t, err, "re-decode of %s", b1)
		b2, err := sessnap.Encode(s2)
		require.NoError(t, err)
		require.Equal(t, string(b1), string(b2))
	})
}

func TestMarshalDeterministic(t *testing.T) {
	s := fullSession()
	first, err := sessnap.Encode(s)
	require.NoError(t, err)
	for range 50 { // map iteration order is random; the bytes must not be
		again, err := sessnap.Encode(s)
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
}

func TestMarshalRefusesInexactValues(t *testing.T) {
	base := func() sessnap.Snapshot {
		snap, err := sessnap.Of(sessiontest.InState("x", session.StateRunning))
		require.NoError(t, err)
		return snap
	}
	tests := []struct {
		name     string
		mutate   func(*sessnap.Snapshot)
		wantPath string
	}{
		{"int above 2^53-1", func(s *sessnap.Snapshot) { s.Counters.Turns = 1 << 53 }, "$.counters.turns"},
		{"int below -(2^53-1)", func(s *sessnap.Snapshot) { s.Limits.MaxTurns = -(1 << 60) }, "$.limits.max_turns"},
		{"usage above 2^53-1", func(s *sessnap.Snapshot) { s.Usage.InputTokens = 1<<53 + 1 }, "$.usage.input_tokens"},
		{"invalid utf-8 title", func(s *sessnap.Snapshot) { s.Title = "caf\xe9" }, "$.title"},
		{"invalid utf-8 map key", func(s *sessnap.Snapshot) { s.Placement.Labels = map[string]string{"\xff": "v"} }, "$.placement.labels"},
		{"non-UTC time", func(s *sessnap.Snapshot) { s.CreatedAt = s.CreatedAt.In(time.FixedZone("CET", 3600)) }, "$.created_at"},
		{"invalid raw JSON", func(s *sessnap.Snapshot) {
			s.Pending = &session.PendingAsk{ID: "a", ToolCallID: "b", Tool: "c", Input: json.RawMessage(`{"x":`)}
		}, "$.pending.input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := base()
			tt.mutate(&snap)
			_, err := sessnap.Marshal(snap)
			require.ErrorIs(t, err, sessnap.ErrUnencodable)
			require.Contains(t, err.Error(), tt.wantPath)
		})
	}
	t.Run("invalid utf-8 nested in a message part", func(t *testing.T) {
		s := sessiontest.New("x")
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "ok \xc3\x28", sessiontest.Epoch)))
		_, err := sessnap.Encode(s)
		require.ErrorIs(t, err, sessnap.ErrUnencodable)
		require.Contains(t, err.Error(), "$.messages[0].parts[0].text")
	})
}

func TestOfNil(t *testing.T) {
	_, err := sessnap.Of(nil)
	require.ErrorIs(t, err, sessnap.ErrNilSession)
	require.EqualError(t, err, "sessnap: nil session")
}

// TestSnapshotIsACopy: a snapshot's fields are its own, except the
// conversation, which it shares with the session (read-only: a message
// never changes once appended), so that taking a snapshot copies nothing
// of it, however long.
func TestSnapshotIsACopy(t *testing.T) {
	s := fullSession()
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	before, err := sessnap.Encode(s)
	require.NoError(t, err)
	require.Same(t, &s.Conversation()[1], &snap.Messages[1], "the conversation is shared")
	snap.DebugMCPTools[0] = "evil"
	snap.Placement.Labels["team"] = "evil"
	snap.Authority.Capabilities[0] = "evil"
	snap.Owner.Subject = "evil"
	after, err := sessnap.Encode(s)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}

// TestSnapshotIsACopyV2: the fields schema 2 adds outside the
// conversation share no memory with the session either.
func TestSnapshotIsACopyV2(t *testing.T) {
	s := fullSessionV2()
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	before, err := sessnap.Encode(s)
	require.NoError(t, err)
	snap.Labels["team"] = "evil"
	snap.Origin.SessionID = "evil"
	after, err := sessnap.Encode(s)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}

func TestMarshalRefusesInexactValuesV2(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*sessnap.Snapshot)
		wantPath string
	}{
		{"invalid utf-8 label value", func(s *sessnap.Snapshot) { s.Labels["team"] = "\xff" }, "$.labels.team"},
		{"invalid utf-8 workspace", func(s *sessnap.Snapshot) { s.Workspace.Branch = "\xc3\x28" }, "$.workspace.branch"},
		{"origin bytes above 2^53-1", func(s *sessnap.Snapshot) { s.Origin.Bytes = 1 << 60 }, "$.origin.bytes"},
		{"invalid raw result", func(s *sessnap.Snapshot) { s.Messages[3].Parts[0].Result = json.RawMessage(`{"x":`) }, "$.messages[3].parts[0].result"},
		{"invalid utf-8 nested text", func(s *sessnap.Snapshot) { s.Messages[3].Parts[0].Content[0].Text = "\xff" }, "$.messages[3].parts[0].content[0].text"},
		{"message usage above 2^53-1", func(s *sessnap.Snapshot) { s.Messages[2].Usage.OutputTokens = 1 << 54 }, "$.messages[2].usage.output_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := sessnap.Of(fullSessionV2())
			require.NoError(t, err)
			tt.mutate(&snap)
			_, err = sessnap.Marshal(snap)
			require.ErrorIs(t, err, sessnap.ErrUnencodable)
			require.Contains(t, err.Error(), tt.wantPath)
		})
	}
}

func TestRestoreStateRules(t *testing.T) {
	fresh := func() *session.Session { return sessiontest.New("rs") }
	ask := &session.PendingAsk{ID: "a", ToolCallID: "t", Tool: "bash", AskedAt: sessiontest.Epoch}
	c := session.Counters{Turns: 4, ToolCalls: 9, Approvals: 2}
	u := session.Usage{InputTokens: 10, OutputTokens: 20}
	tests := []struct {
		name      string
		state     session.State
		stop      session.StopReason
		pending   *session.PendingAsk
		permanent bool
		lastError string
		wantErr   error
	}{
		{name: "idle", state: session.StateIdle},
		{name: "running keeps counters", state: session.StateRunning},
		{name: "awaiting", state: session.StateAwaiting, pending: ask},
		{name: "completed", state: session.StateCompleted, stop: session.StopCompleted},
		{name: "completed legacy no reason", state: session.StateCompleted},
		{name: "stopped", state: session.StateStopped, stop: session.StopMaxRunTokens},
		{name: "cancelled", state: session.StateCancelled, stop: session.StopCancelled},
		{name: "failed", state: session.StateFailed, stop: session.StopError, permanent: true, lastError: "boom"},
		{name: "unknown state", state: "zombie", wantErr: sessnap.ErrUnknownState},
		{name: "awaiting without ask", state: session.StateAwaiting, wantErr: sessnap.ErrInvalid},
		{name: "ask on running", state: session.StateRunning, pending: ask, wantErr: sessnap.ErrInvalid},
		{name: "stop on idle", state: session.StateIdle, stop: session.StopUserStop, wantErr: sessnap.ErrInvalid},
		{name: "stopped with completed", state: session.StateStopped, stop: session.StopCompleted, wantErr: session.ErrInvalid},
		{name: "completed with user_stop", state: session.StateCompleted, stop: session.StopUserStop, wantErr: sessnap.ErrInvalid},
		{name: "unknown stop reason", state: session.StateStopped, stop: "tired", wantErr: sessnap.ErrInvalid},
		{name: "permanent on completed", state: session.StateCompleted, permanent: true, wantErr: sessnap.ErrInvalid},
		{name: "last error on idle", state: session.StateIdle, lastError: "x", wantErr: sessnap.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fresh()
			err := sessnap.RestoreState(s, tt.state, tt.stop, tt.pending, c, u, tt.permanent, tt.lastError)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.state, s.State())
			require.Equal(t, c, s.Counters())
			require.Equal(t, u, s.Usage())
			if tt.state.Terminal() {
				require.NotEmpty(t, s.RecordedStopReason())
			}
		})
	}
	t.Run("not fresh", func(t *testing.T) {
		s := sessiontest.InState("x", session.StateRunning)
		require.ErrorIs(t, sessnap.RestoreState(s, session.StateIdle, "", nil, c, u, false, ""), sessnap.ErrInvalid)
	})
}

func TestValidatePersistedAuthority(t *testing.T) {
	require.ErrorIs(t, sessnap.ValidatePersistedAuthority(nil), sessnap.ErrInvalidAuthority)
	require.NoError(t, sessnap.ValidatePersistedAuthority(&session.Authority{Capabilities: []string{"files.read"}}))
	require.ErrorIs(t, sessnap.ValidatePersistedAuthority(&session.Authority{Capabilities: []string{"files.write", "files.read"}}), sessnap.ErrInvalidAuthority)
}

// TestBudgetSurvivesRestore: the MaxRunTokens brake is evaluated against
// restored usage.
func TestBudgetSurvivesRestore(t *testing.T) {
	cfg := sessiontest.Config("budget")
	cfg.Limits = session.Limits{MaxRunTokens: 100}
	s, err := session.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.BeginTurn())
	require.NoError(t, s.AddUsage(session.Usage{InputTokens: 60, OutputTokens: 45}))
	require.Equal(t, session.StopMaxRunTokens, s.StopReason())
	b, err := sessnap.Encode(s)
	require.NoError(t, err)
	r, err := sessnap.Decode(b)
	require.NoError(t, err)
	require.Equal(t, session.StopMaxRunTokens, r.StopReason())
	require.Equal(t, session.StopReason(""), r.RecordedStopReason())
}

// TestOfCostsNothingPerMessage: taking a snapshot allocates the same for a
// conversation of ten messages and of ten thousand.
func TestOfCostsNothingPerMessage(t *testing.T) {
	allocs := func(n int) float64 {
		s := fullSession()
		for range n {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "more", time.Time{})))
		}
		return testing.AllocsPerRun(50, func() { _, _ = sessnap.Of(s) })
	}
	require.Equal(t, allocs(10), allocs(10000))
}
