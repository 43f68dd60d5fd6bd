package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

func newTestSession(t *testing.T) *Session {
	t.Helper()
	s, err := New(Config{
		ID: "t1", CreatedAt: epoch, Kind: KindPrimary, Limits: Limits{MaxTurns: 2, MaxToolCalls: 3},
		EnvironmentRef:  EnvironmentRef{Provider: "p", ID: "i", Revision: "r"},
		DebugMCPServers: []string{"a"}, Placement: PlacementMetadata{Labels: map[string]string{"k": "v"}},
		Authority: &Authority{Capabilities: []string{CapFilesRead}},
	})
	require.NoError(t, err)
	return s
}

var testAsk = PendingAsk{ID: "a1", ToolCallID: "c1", Tool: "bash", Input: json.RawMessage(`{"cmd":"ls"}`), AskedAt: epoch}

// fire applies event to s with plausible arguments.
func fire(s *Session, e Event) error {
	switch e {
	case EventBeginTurn:
		return s.BeginTurn()
	case EventEndTurn:
		return s.EndTurn()
	case EventPause:
		return s.PauseForApproval(testAsk)
	case EventResume:
		return s.ResolveApproval(true)
	case EventComplete:
		return s.Complete()
	case EventStop:
		return s.Stop(StopUserStop)
	case EventCancel:
		return s.Cancel()
	case EventFail:
		return s.Fail("boom")
	}
	panic(e)
}

// inState drives a new session to st along the shortest legal path.
func inState(t *testing.T, st State) *Session {
	s := newTestSession(t)
	paths := map[State][]Event{
		StateIdle:      nil,
		StateRunning:   {EventBeginTurn},
		StateAwaiting:  {EventBeginTurn, EventPause},
		StateCompleted: {EventComplete},
		StateStopped:   {EventStop},
		StateCancelled: {EventCancel},
		StateFailed:    {EventFail},
	}
	for _, e := range paths[st] {
		require.NoError(t, fire(s, e))
	}
	require.Equal(t, st, s.State())
	return s
}

// TestTransitionTableExhaustive fires every event from every state: legal
// ones land where the table says, illegal ones return *TransitionError and
// change nothing, and terminal states accept nothing.
func TestTransitionTableExhaustive(t *testing.T) {
	events := []Event{EventBeginTurn, EventEndTurn, EventPause, EventResume, EventComplete, EventStop, EventCancel, EventFail}
	want := map[State]map[Event]State{
		StateIdle:     {EventBeginTurn: StateRunning, EventComplete: StateCompleted, EventStop: StateStopped, EventCancel: StateCancelled, EventFail: StateFailed},
		StateRunning:  {EventEndTurn: StateIdle, EventPause: StateAwaiting, EventComplete: StateCompleted, EventStop: StateStopped, EventCancel: StateCancelled, EventFail: StateFailed},
		StateAwaiting: {EventResume: StateRunning, EventStop: StateStopped, EventCancel: StateCancelled, EventFail: StateFailed},
	}
	for _, from := range States {
		for _, e := range events {
			s := inState(t, from)
			before := *s
			err := fire(s, e)
			to, legal := want[from][e]
			if legal {
				require.NoError(t, err, "%s from %s", e, from)
				require.Equal(t, to, s.State(), "%s from %s", e, from)
				continue
			}
			var te *TransitionError
			require.ErrorAs(t, err, &te, "%s from %s", e, from)
			require.ErrorIs(t, err, ErrIllegalTransition)
			require.Equal(t, from, te.From)
			require.True(t, reflect.DeepEqual(before, *s), "illegal %s from %s changed the session", e, from)
			if from.Terminal() {
				require.Contains(t, err.Error(), "terminal")
			}
		}
	}
}

func TestPendingAskOnlyWhileAwaiting(t *testing.T) {
	for _, st := range States {
		s := inState(t, st)
		ask, err := s.PendingAsk()
		if st == StateAwaiting {
			require.NoError(t, err)
			require.Equal(t, "a1", ask.ID)
			ask.Input[0] = 'X' // a copy
			again, _ := s.PendingAsk()
			require.Equal(t, byte('{'), again.Input[0])
			continue
		}
		require.ErrorIs(t, err, ErrNoPendingAsk, st)
	}
	s := inState(t, StateAwaiting)
	require.NoError(t, s.ResolveApproval(true))
	_, err := s.PendingAsk()
	require.ErrorIs(t, err, ErrNoPendingAsk)
	require.Equal(t, int64(1), s.Counters().Approvals)
}

func TestPauseOnlyFromRunningAndValidatesAsk(t *testing.T) {
	s := inState(t, StateIdle)
	require.ErrorIs(t, s.PauseForApproval(testAsk), ErrIllegalTransition)
	s = inState(t, StateRunning)
	require.ErrorIs(t, s.PauseForApproval(PendingAsk{ID: "x"}), ErrInvalid)
	require.Equal(t, StateRunning, s.State())
}

func TestStopReasons(t *testing.T) {
	s := inState(t, StateRunning)
	require.ErrorIs(t, s.Stop(StopCompleted), ErrInvalid, "completed is not a Stop reason")
	require.Equal(t, StateRunning, s.State())
	require.Equal(t, StopReason(""), s.RecordedStopReason())
	// Limits derive a reason without recording one.
	require.NoError(t, s.EndTurn())
	require.NoError(t, s.BeginTurn())
	require.Equal(t, StopMaxTurns, s.StopReason())
	require.Equal(t, StopReason(""), s.RecordedStopReason())
	require.NoError(t, s.Stop(StopUserStop))
	require.Equal(t, StopUserStop, s.RecordedStopReason())
	require.Equal(t, StopUserStop, s.StopReason(), "the recorded reason wins over a derived one")
}

func TestLimitReached(t *testing.T) {
	s, err := New(Config{ID: "l", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"},
		Limits: Limits{MaxToolCalls: 1, MaxDurationMS: 1000}})
	require.NoError(t, err)
	require.Equal(t, StopReason(""), s.LimitReached(epoch.Add(999*time.Millisecond)))
	require.Equal(t, StopMaxDuration, s.LimitReached(epoch.Add(time.Second)))
	require.NoError(t, s.BeginTurn())
	require.NoError(t, s.RecordToolCall())
	require.Equal(t, StopMaxToolCalls, s.StopReason())
}

func TestConfigImmutable(t *testing.T) {
	servers := []string{"a"}
	labels := map[string]string{"k": "v"}
	auth := &Authority{Capabilities: []string{CapFilesRead}}
	s, err := New(Config{ID: "i", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"},
		DebugMCPServers: servers, Placement: PlacementMetadata{Labels: labels}, Authority: auth})
	require.NoError(t, err)
	servers[0], labels["k"], auth.Capabilities[0] = "x", "x", "x"
	cfg := s.Config()
	require.Equal(t, []string{"a"}, cfg.DebugMCPServers)
	require.Equal(t, "v", cfg.Placement.Labels["k"])
	require.Equal(t, CapFilesRead, cfg.Authority.Capabilities[0])
	cfg.DebugMCPServers[0], cfg.Placement.Labels["k"], cfg.Authority.Capabilities[0] = "y", "y", "y"
	again := s.Config()
	require.Equal(t, "a", again.DebugMCPServers[0])
	require.Equal(t, "v", again.Placement.Labels["k"])
	require.Equal(t, CapFilesRead, again.Authority.Capabilities[0])
}

// TestConversationIsShared: AppendMessage keeps a copy of what it is
// given, and Conversation hands out the session's own messages without
// copying them — the same memory every time, at no cost per message — in
// a slice whose appends never reach the session.
func TestConversationIsShared(t *testing.T) {
	s := newTestSession(t)
	m := Message{Role: RoleUser, Parts: []Part{{Type: PartBlob, MediaType: "x/y", Data: []byte{1}}}}
	require.NoError(t, s.AppendMessage(m))
	m.Parts[0].Data[0] = 9
	got := s.Conversation()
	require.Equal(t, byte(1), got[0].Parts[0].Data[0], "the session holds a copy of what was appended")
	require.Same(t, &got[0], &s.Conversation()[0], "one copy, shared")
	for range 1000 {
		require.NoError(t, s.AppendMessage(TextMessage(RoleUser, "more", time.Time{})))
	}
	allocs := testing.AllocsPerRun(100, func() { _ = s.Conversation() })
	require.Zero(t, allocs, "taking the conversation copies nothing")
	c := s.Conversation()
	_ = append(c, TextMessage(RoleUser, "not the session's", time.Time{}))
	require.Len(t, s.Conversation(), 1001)
	require.Equal(t, "more", s.Conversation()[1000].Parts[0].Text)
}

func TestOwnerWriteOnce(t *testing.T) {
	s := newTestSession(t)
	require.NoError(t, s.RestoreLabels(nil))
	require.NoError(t, s.RestoreLabels(&Principal{Subject: "u1"}))
	require.NoError(t, s.RestoreLabels(&Principal{Subject: "u1"}), "same owner again is fine")
	require.ErrorIs(t, s.RestoreLabels(&Principal{Subject: "u2"}), ErrImmutable)
	require.Equal(t, "u1", s.Owner().Subject)
	s.Owner().Subject = "u3"
	require.Equal(t, "u1", s.Owner().Subject)
	require.ErrorIs(t, s.RestoreLabels(&Principal{}), ErrInvalid)
}

func TestRestoreTotalsOnce(t *testing.T) {
	s := newTestSession(t)
	require.ErrorIs(t, s.RestoreTotals(Counters{Turns: -1}, Usage{}), ErrInvalid)
	require.NoError(t, s.RestoreTotals(Counters{Turns: 3}, Usage{InputTokens: 5}))
	require.ErrorIs(t, s.RestoreTotals(Counters{}, Usage{}), ErrImmutable)
}

func TestNewValidates(t *testing.T) {
	good := Config{ID: "x", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"}}
	tests := []struct {
		name   string
		mutate func(*Config)
	}{
		{"empty id", func(c *Config) { c.ID = "" }},
		{"zero created", func(c *Config) { c.CreatedAt = time.Time{} }},
		{"bad mode", func(c *Config) { c.Mode = "yolo" }},
		{"bad kind", func(c *Config) { c.Kind = "root" }},
		{"negative limit", func(c *Config) { c.Limits.MaxTurns = -1 }},
		{"incomplete env", func(c *Config) { c.EnvironmentRef.Revision = "" }},
		{"bad authority", func(c *Config) { c.Authority = &Authority{} }},
		{"unsorted authority", func(c *Config) { c.Authority = &Authority{Capabilities: []string{CapFilesWrite, CapFilesRead}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.mutate(&c)
			_, err := New(c)
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
	s, err := New(good)
	require.NoError(t, err)
	require.Equal(t, ModeDefault, s.Mode())
	require.Equal(t, KindUnknown, s.Kind())
}

func TestMessagesValidated(t *testing.T) {
	s := newTestSession(t)
	bad := []Message{
		{Role: "bot", Parts: []Part{{Type: PartText}}},
		{Role: RoleUser},
		{Role: RoleUser, Parts: []Part{{Type: "video"}}},
		{Role: RoleAssistant, Parts: []Part{{Type: PartToolCall, Name: "x"}}},
		{Role: RoleAssistant, Parts: []Part{{Type: PartToolCall, ToolCallID: "c", Name: "x", Input: json.RawMessage("{")}}},
		{Role: RoleTool, Parts: []Part{{Type: PartToolResult}}},
		{Role: RoleUser, Parts: []Part{{Type: PartImage}}},
	}
	for i, m := range bad {
		require.ErrorIs(t, s.AppendMessage(m), ErrInvalid, "message %d", i)
	}
	require.Equal(t, 0, s.MessageCount())
	require.NoError(t, s.Complete())
	require.ErrorIs(t, s.AppendMessage(TextMessage(RoleUser, "late", epoch)), ErrIllegalTransition)
}

func TestFailureFactsOnlyWhenFailed(t *testing.T) {
	s := inState(t, StateRunning)
	require.ErrorIs(t, s.RecordFailurePermanence(true), ErrIllegalTransition)
	require.ErrorIs(t, s.RecordLastError("x"), ErrIllegalTransition)
	require.ErrorIs(t, s.RecordRetryFacts(RetryRetryable, ProgressNone), ErrIllegalTransition)
	require.NoError(t, s.PrepareRetry(RetryRetryable, ProgressNone))
	require.NoError(t, s.Fail("line one\nline two\x00"))
	pending, _, _ := s.RetryPending()
	require.False(t, pending, "a terminal transition consumes the retry intent")
	require.Equal(t, "line one line two", s.LastError())
	require.NoError(t, s.RecordFailurePermanence(true))
	require.True(t, s.Permanent())
}

func FuzzNormalizeLastError(f *testing.F) {
	f.Add("simple")
	f.Add("multi\nline\r\n\ttabs \x00 nul \xff bad")
	f.Add(strings.Repeat("é", MaxLastErrorRunes+10))
	// The last errors and titles of the committed snapshot fixtures.
	files, err := filepath.Glob("../testdata/sessnap/*.json")
	require.NoError(f, err)
	require.NotEmpty(f, files)
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		var fields map[string]json.RawMessage
		if json.Unmarshal(b, &fields) != nil {
			continue // the fixtures of invalid snapshots include bad JSON
		}
		for _, key := range []string{"last_error", "title"} {
			var v string
			if json.Unmarshal(fields[key], &v) == nil {
				f.Add(v)
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeLastError(s)
		require.Equal(t, n, NormalizeLastError(n), "idempotent")
		require.NotContains(t, n, "\n")
		require.LessOrEqual(t, len([]rune(n)), MaxLastErrorRunes)
	})
}

func TestTitleFromPrompt(t *testing.T) {
	require.Equal(t, "Fix the bug", TitleFromPrompt("\n  Fix the bug  \nin parser"))
	long := TitleFromPrompt(strings.Repeat("word ", 100))
	require.Equal(t, MaxTitleRunes, len([]rune(long)))
	require.True(t, strings.HasSuffix(long, "…"))
	require.Equal(t, "", TitleFromPrompt(" \n "))
}
