package sessiontest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// Epoch is the fixed time fixtures are built at.
var Epoch = time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)

// Env is a complete environment reference.
var Env = session.EnvironmentRef{Provider: "local", ID: "workstation-7", Revision: "r42"}

// Config returns a typical configuration for a session called id.
func Config(id string) session.Config {
	return session.Config{
		ID:             session.SessionID(id),
		CreatedAt:      Epoch,
		Mode:           session.ModeDefault,
		Kind:           session.KindPrimary,
		Limits:         session.Limits{MaxTurns: 50, MaxRunTokens: 1_000_000},
		ProviderID:     "anthropic",
		ModelID:        "claude-sonnet",
		EnvironmentRef: Env,
	}
}

// New returns a fresh idle session with Config(id), or panics.
func New(id string) *session.Session {
	s, err := session.New(Config(id))
	must(err)
	return s
}

// InState returns a session with a short conversation driven to state, with
// the facts that state carries (a pending ask for awaiting, a stop reason
// for terminal states, permanence and last error for failed).
func InState(id string, state session.State) *session.Session {
	s := New(id)
	at := Epoch.Add(time.Second)
	must(s.AppendMessage(session.TextMessage(session.RoleUser, "Refactor the parser\nand add tests", at)))
	must(s.SetTitle(session.TitleFromPrompt("Refactor the parser\nand add tests"), session.TitleFirstPrompt))
	if state == session.StateIdle {
		return s
	}
	must(s.SetRunID("run-1"))
	must(s.BeginTurn())
	must(s.AddUsage(session.Usage{InputTokens: 1200, OutputTokens: 340, CacheReadTokens: 800}))
	must(s.AppendMessage(session.Message{Role: session.RoleAssistant, CreatedAt: at.Add(time.Second), Parts: []session.Part{
		{Type: session.PartText, Text: "Reading the parser first."},
		{Type: session.PartToolCall, ToolCallID: "call-1", Name: "read_file", Input: json.RawMessage(`{"path":"parser.go"}`)},
	}}))
	must(s.RecordToolCall())
	switch state {
	case session.StateRunning:
	case session.StateAwaiting:
		must(s.PauseForApproval(session.PendingAsk{
			ID: "ask-1", ToolCallID: "call-2", Tool: "write_file",
			Input: json.RawMessage(`{"path":"parser.go","bytes":2048}`), Reason: "writes a file", AskedAt: at.Add(2 * time.Second),
		}))
	case session.StateCompleted:
		must(s.EndTurn())
		must(s.Complete())
	case session.StateStopped:
		must(s.Stop(session.StopMaxTurns))
	case session.StateCancelled:
		must(s.Cancel())
	case session.StateFailed:
		must(s.Fail("model stream: connection reset\nafter 3 retries"))
		must(s.RecordFailurePermanence(true))
		must(s.RecordRetryFacts(session.RetryNotRetryable, session.ProgressPartial))
	default:
		panic(fmt.Sprintf("sessiontest: unknown state %q", state))
	}
	return s
}

// Step applies one random legal-or-illegal action to s, drawn from r. It
// returns the name of the action and whether the session accepted it.
// Illegal actions must leave s unchanged; callers check that.
func Step(s *session.Session, r *rand.Rand, at time.Time) (string, error) {
	switch r.IntN(16) {
	case 0:
		return "begin_turn", s.BeginTurn()
	case 1:
		return "end_turn", s.EndTurn()
	case 2:
		return "pause", s.PauseForApproval(session.PendingAsk{
			ID: fmt.Sprintf("ask-%d", r.IntN(1000)), ToolCallID: "call-x", Tool: "bash",
			Input: json.RawMessage(`{"cmd":"make test"}`), Reason: "runs a command", AskedAt: at,
		})
	case 3:
		return "resume", s.ResolveApproval(r.IntN(2) == 0)
	case 4:
		return "complete", s.Complete()
	case 5:
		reasons := []session.StopReason{session.StopUserStop, session.StopMaxTurns, session.StopMaxToolCalls, session.StopMaxRunTokens, session.StopMaxDuration}
		return "stop", s.Stop(reasons[r.IntN(len(reasons))])
	case 6:
		if r.IntN(4) != 0 { // keep walks long: cancel rarely
			return "cancel(skipped)", nil
		}
		return "cancel", s.Cancel()
	case 7:
		if r.IntN(3) != 0 {
			return "fail(skipped)", nil
		}
		return "fail", s.Fail(fmt.Sprintf("error %d\n  detail", r.IntN(100)))
	case 8:
		return "message", s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("prompt %d ✓", r.IntN(1000)), at))
	case 9:
		return "tool_message", s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{
			{Type: session.PartToolResult, ToolCallID: "call-x", Output: "ok", IsError: r.IntN(2) == 0},
			{Type: session.PartBlob, MediaType: "application/octet-stream", Data: []byte{0, 1, 0xff, byte(r.IntN(256))}},
		}})
	case 10:
		return "tool_call", s.RecordToolCall()
	case 11:
		return "usage", s.AddUsage(session.Usage{InputTokens: r.Int64N(5000), OutputTokens: r.Int64N(2000), CacheWriteTokens: r.Int64N(10)})
	case 12:
		return "title", s.SetTitle(fmt.Sprintf("title %d", r.IntN(100)), session.TitleGenerated)
	case 13:
		return "run_id", s.SetRunID(fmt.Sprintf("run-%d", r.IntN(100)))
	case 14:
		if r.IntN(2) == 0 {
			s.ClearRetryPending()
			return "clear_retry", nil
		}
		return "prepare_retry", s.PrepareRetry(session.RetryRetryable, session.ProgressNone)
	default:
		if err := s.RecordFailurePermanence(r.IntN(2) == 0); err != nil {
			return "permanence", err
		}
		return "retry_facts", s.RecordRetryFacts(session.RetryRetryable, session.ProgressPartial)
	}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// StepSchema2 applies one random action on the fields sessnap schema 2
// added (labels, workspace, origin, and messages that use every new field),
// drawn from r. Like Step, it returns the action's name and the session's
// answer; a refused action must leave s unchanged.
func StepSchema2(s *session.Session, r *rand.Rand, at time.Time) (string, error) {
	n := r.IntN(1000)
	switch r.IntN(7) {
	case 0:
		return "set_label", s.SetLabel(fmt.Sprintf("k%d", r.IntN(80)), fmt.Sprintf("v%d ✓", n))
	case 1:
		s.RemoveLabel(fmt.Sprintf("k%d", r.IntN(80)))
		return "remove_label", nil
	case 2:
		project := "/src/app"
		if r.IntN(8) == 0 {
			project = "/src/other" // refused once a project is set
		}
		return "workspace", s.SetWorkspace(session.Workspace{Project: project, Dir: fmt.Sprintf("/src/app/d%d", n), Branch: fmt.Sprintf("b%d", n%7)})
	case 3:
		o := session.Origin{Tool: "codex", SessionID: "thread-1", Lines: int64(n), Bytes: int64(n) * 100}
		if r.IntN(8) == 0 {
			o.SessionID = "thread-2" // refused once an origin is set
		}
		return "origin", s.SetOrigin(&o)
	case 4:
		u := session.Usage{InputTokens: int64(n), OutputTokens: int64(n / 2)}
		return "assistant_v2", s.AppendMessage(session.Message{
			ID: fmt.Sprintf("a%d", n), Role: session.RoleAssistant, ResponseID: fmt.Sprintf("resp_%d", n), Model: "m",
			Usage: &u, CreatedAt: at, ProviderPhase: "commentary", Parts: []session.Part{
				{Type: session.PartReasoning, Text: "think", Signature: "sig", Encrypted: "enc"},
				{Type: session.PartToolCall, ToolCallID: fmt.Sprintf("c%d", n), Name: "web_search", Input: json.RawMessage(`{"q":"x"}`), ProviderExecuted: r.IntN(2) == 0},
			},
		})
	case 5:
		return "tool_v2", s.AppendMessage(session.Message{
			ID: fmt.Sprintf("t%d", n), Role: session.RoleTool, CreatedAt: at, Parts: []session.Part{
				{Type: session.PartToolResult, ToolCallID: fmt.Sprintf("c%d", n), Result: json.RawMessage(`{"exit_code":1}`), IsError: true,
					Content: []session.Part{{Type: session.PartText, Text: "out"}, {Type: session.PartImage, URL: "https://e.x/a.png"},
						{Type: session.PartBlob, MediaType: "application/pdf", Data: []byte{0, byte(n)}}}},
			},
		})
	default:
		m := session.Message{ID: fmt.Sprintf("u%d", n), Role: session.RoleUser, CreatedAt: at, Injected: r.IntN(2) == 0,
			Parts: []session.Part{{Type: session.PartText, Text: "summary"}}}
		if r.IntN(2) == 0 {
			m.Compaction = &session.Compaction{Trigger: session.CompactionManual, PreTokens: int64(n)}
		} else {
			m.Error = "API Error"
		}
		return "user_v2", s.AppendMessage(m)
	}
}
