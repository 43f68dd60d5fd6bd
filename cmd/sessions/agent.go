package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// This file is one agent process of the demo (`sessions demo-agent`, a
// hidden command the demo starts with its own binary). An agent creates
// its session and runs turns — user messages, a tool call and its result,
// an approval, token usage — appending a revision per step, exactly as an
// agent runtime would use the store. With --takeover it instead acquires
// an existing session (whose holder died), restores it and finishes it.
//
// Every line it prints is for people; a line starting "rev N:" says that
// revision N is durable, which the demo uses to decide when to kill it.

const agentDoc = `
One agent process of 'sessions demo' (not meant to be run by hand).`

// agentScript is what one demo agent does.
type agentScript struct {
	id       session.SessionID
	label    string
	kind     session.SessionKind
	prompt   string
	turns    int
	approval int // the turn whose tool call needs the user's approval (0: none)
	delay    time.Duration
	// labels and workspace are the session's at creation.
	labels    labelFlag
	workspace session.Workspace
}

// agentTools are the tool calls the demo agents make, in turn.
var agentTools = []struct {
	name, input, output string
}{
	{"read_file", `{"path":"internal/parse/duration_test.go"}`, "func TestParseDuration(t *testing.T) {\n\tfor _, tc := range cases {…"},
	{"run_command", `{"cmd":"go test ./internal/parse -run TestParseDuration -count=50"}`, "--- FAIL: TestParseDuration (0.00s)\n    duration_test.go:41: got 1h0m0s, want 59m59.999s\nFAIL (3 of 50 runs)"},
	{"search_issues", `{"label":"bug","state":"open"}`, "#412 panic on empty config\n#415 watch misses renames\n#419 docs: wrong default"},
	{"write_file", `{"path":"internal/parse/duration.go","bytes":1834}`, "wrote 1834 bytes"},
	{"http_get", `{"url":"https://proxy.golang.org/github.com/fsnotify/fsnotify/@latest"}`, `{"Version":"v1.10.1","Time":"2026-10-02T08:11:40Z"}`},
}

func cmdDemoAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("demo-agent", agentDoc, stdout, stderr)
	var a agentScript
	var id, kind string
	takeover := c.fs.Bool("takeover", false, "acquire the session (whose holder died), restore it and finish it")
	c.fs.StringVar(&id, "id", "", "session `ID`")
	c.fs.StringVar(&a.label, "label", "agent", "lease label")
	c.fs.StringVar(&kind, "kind", "primary", "session kind")
	c.fs.StringVar(&a.prompt, "prompt", "Say hello", "the user's first prompt")
	c.fs.IntVar(&a.turns, "turns", 2, "turns to run")
	c.fs.IntVar(&a.approval, "approval-turn", 0, "the turn whose tool call needs approval")
	c.fs.DurationVar(&a.delay, "delay", 100*time.Millisecond, "pause between steps")
	c.fs.Var(&a.labels, "tag", "a label of the session, `key=value` (repeatable)")
	c.fs.StringVar(&a.workspace.Project, "project", "", "the session's project `directory`")
	c.fs.StringVar(&a.workspace.Dir, "workdir", "", "the agent's working `directory`")
	c.fs.StringVar(&a.workspace.Branch, "branch", "", "the git `branch` checked out")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	var err error
	if err = checkNames([]string{id}); err != nil {
		return c.usageError("%v", err)
	}
	a.id = session.SessionID(id)
	a.kind = session.SessionKind(kind)
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		if *takeover {
			err = a.takeOver(ctx, st, stdout)
		} else {
			err = a.run(ctx, st, stdout)
		}
		if err != nil {
			return c.fail(err)
		}
		return exitOK
	})
}

// agentRun is an agent driving its session through a writer.
type agentRun struct {
	w     sessionstore.Writer
	s     *session.Session
	rev   uint64
	out   io.Writer
	delay time.Duration
}

// step appends the session's current state as the next revision and says
// what it was.
func (r *agentRun) step(ctx context.Context, format string, args ...any) error {
	snap, err := sessnap.Of(r.s)
	if err != nil {
		return err
	}
	rev, err := r.w.Append(ctx, r.rev, snap)
	if err != nil {
		return err
	}
	r.rev = rev
	fmt.Fprintf(r.out, "rev %d: %s\n", rev, fmt.Sprintf(format, args...))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(r.delay):
	}
	return nil
}

// complete completes the session and appends the revision.
func (r *agentRun) complete(ctx context.Context) error {
	if err := r.s.Complete(); err != nil {
		return err
	}
	return r.step(ctx, "completed")
}

// release releases the lease and says so.
func (r *agentRun) release(ctx context.Context) error {
	if err := r.w.Release(ctx); err != nil {
		return err
	}
	fmt.Fprintln(r.out, "released the lease")
	return nil
}

func (a *agentScript) run(ctx context.Context, st *jsonlstore.Store, out io.Writer) error {
	host, _ := os.Hostname()
	now := time.Now().UTC()
	s, err := session.New(session.Config{
		ID: a.id, CreatedAt: now, Mode: session.ModeDefault, Kind: a.kind,
		Limits:     session.Limits{MaxTurns: 20, MaxToolCalls: 50, MaxRunTokens: 500_000},
		ProviderID: "anthropic", ModelID: "claude-sonnet",
		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: orDash(host), Revision: "demo"},
		Labels:         a.labels.m, Workspace: a.workspace,
	})
	if err != nil {
		return err
	}
	if err := s.RestoreLabels(&session.Principal{Subject: "demo-user"}); err != nil {
		return err
	}
	if err := s.AppendMessage(session.TextMessage(session.RoleUser, a.prompt, now)); err != nil {
		return err
	}
	if err := s.SetTitle(session.TitleFromPrompt(a.prompt), session.TitleFirstPrompt); err != nil {
		return err
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		return err
	}
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: a.label})
	if err != nil {
		return err
	}
	defer func() { _ = w.Release(context.WithoutCancel(ctx)) }() // error paths: the Release at the end reports its error
	r := &agentRun{w: w, s: s, rev: 1, out: out, delay: a.delay}
	fmt.Fprintf(out, "rev 1: created %s session, lease generation %d; user: %q\n", a.kind, w.Generation(), a.prompt)
	for turn := 1; turn <= a.turns; turn++ {
		if turn > 1 {
			msg := fmt.Sprintf("Thanks. Now step %d, please.", turn)
			if err := s.AppendMessage(session.TextMessage(session.RoleUser, msg, time.Now().UTC())); err != nil {
				return err
			}
			if err := r.step(ctx, "user: %q", msg); err != nil {
				return err
			}
		}
		if err := runTurn(ctx, r, a, turn); err != nil {
			return err
		}
		if turn < a.turns {
			if err := s.EndTurn(); err != nil {
				return err
			}
			if err := r.step(ctx, "turn %d ended (idle)", turn); err != nil {
				return err
			}
		}
	}
	if err := r.complete(ctx); err != nil {
		return err
	}
	return r.release(ctx)
}

// runTurn runs one turn: begin, a tool call (approved by the user on the
// approval turn), its result, and the assistant's answer, with token usage.
func runTurn(ctx context.Context, r *agentRun, a *agentScript, turn int) error {
	s := r.s
	tool := agentTools[(len(a.label)+int(a.label[len(a.label)-1])+turn)%len(agentTools)]
	callID := fmt.Sprintf("call-%d", turn)
	now := time.Now().UTC()
	if err := s.BeginTurn(); err != nil {
		return err
	}
	if err := r.step(ctx, "turn %d started (running)", turn); err != nil {
		return err
	}
	if err := errors.Join(
		s.AppendMessage(session.Message{Role: session.RoleAssistant, CreatedAt: now, Parts: []session.Part{
			{Type: session.PartText, Text: "Let me look at that."},
			{Type: session.PartToolCall, ToolCallID: callID, Name: tool.name, Input: json.RawMessage(tool.input)},
		}}),
		s.RecordToolCall(),
		s.AddUsage(session.Usage{InputTokens: int64(1800 + 250*turn), OutputTokens: 120, CacheReadTokens: 1200}),
	); err != nil {
		return err
	}
	if err := r.step(ctx, "assistant calls %s %s", tool.name, tool.input); err != nil {
		return err
	}
	if turn == a.approval {
		ask := session.PendingAsk{ID: "ask-" + callID, ToolCallID: callID, Tool: tool.name,
			Input: json.RawMessage(tool.input), Reason: "this tool changes things outside the session", AskedAt: now}
		if err := s.PauseForApproval(ask); err != nil {
			return err
		}
		if err := r.step(ctx, "awaiting the user's approval for %s (ask %s)", tool.name, ask.ID); err != nil {
			return err
		}
		if err := s.ResolveApproval(true); err != nil {
			return err
		}
		if err := r.step(ctx, "user approved %s (running again)", ask.ID); err != nil {
			return err
		}
	}
	if err := s.AppendMessage(session.Message{Role: session.RoleTool, CreatedAt: time.Now().UTC(), Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: callID, Output: tool.output},
	}}); err != nil {
		return err
	}
	if err := r.step(ctx, "tool %s returned %d bytes", tool.name, len(tool.output)); err != nil {
		return err
	}
	answer := fmt.Sprintf("Done with step %d: %s looked fine.", turn, tool.name)
	if err := errors.Join(
		s.AppendMessage(session.TextMessage(session.RoleAssistant, answer, time.Now().UTC())),
		s.AddUsage(session.Usage{InputTokens: int64(2100 + 300*turn), OutputTokens: int64(240 + 20*turn), CacheReadTokens: 1500}),
	); err != nil {
		return err
	}
	u := s.Usage()
	return r.step(ctx, "assistant: %q (tokens so far: %d in, %d out)", answer, u.InputTokens, u.OutputTokens)
}

// takeOver acquires a session whose holder died, restores it from its
// latest revision and finishes it.
func (a *agentScript) takeOver(ctx context.Context, st *jsonlstore.Store, out io.Writer) error {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	w, err := st.Acquire(actx, a.id, sessionstore.AcquireOptions{Label: a.label})
	cancel()
	if err != nil {
		return err
	}
	defer func() { _ = w.Release(context.WithoutCancel(ctx)) }() // error paths: the Release at the end reports its error
	rep := w.Recovery()
	prev := rep.Previous
	switch prev.State {
	case summary.LeaseStale:
		fmt.Fprintf(out, "acquired the lease: generation %d > %d; previous holder %s is stale: it died holding the lease\n",
			rep.Generation, prev.Generation, holderText(prev.Holder))
	default:
		fmt.Fprintf(out, "acquired the lease: generation %d; previous holder: %s\n", rep.Generation, previousText(prev))
	}
	if rep.TailBytes > 0 {
		fmt.Fprintf(out, "recovery: moved an uncommitted tail of %d bytes (a torn append) to %s\n", rep.TailBytes, rep.ForensicFile)
	} else {
		fmt.Fprintln(out, "recovery: the log ends with a whole record; nothing to cut")
	}
	rec, err := st.Load(ctx, a.id)
	if err != nil {
		return err
	}
	s, err := rec.Session()
	if err != nil {
		return err
	}
	cn, u := s.Counters(), s.Usage()
	fmt.Fprintf(out, "restored revision %d (written by generation %d): %s; messages %d, turns %d, tool calls %d, input tokens %d\n",
		rec.Revision, rec.Generation, s.State(), s.MessageCount(), cn.Turns, cn.ToolCalls, u.InputTokens)
	r := &agentRun{w: w, s: s, rev: rec.Revision, out: out, delay: a.delay}
	switch s.State() {
	case session.StateAwaiting:
		ask, _ := s.PendingAsk()
		if err := s.ResolveApproval(true); err != nil {
			return err
		}
		if err := r.step(ctx, "user approved the pending %s (running again)", ask.ID); err != nil {
			return err
		}
	case session.StateIdle:
		if err := s.BeginTurn(); err != nil {
			return err
		}
		if err := r.step(ctx, "turn started (running)"); err != nil {
			return err
		}
	}
	if call, ok := danglingToolCall(s); ok && s.State() == session.StateRunning {
		// The previous holder died between a tool call and its result:
		// run the call again and record the result.
		if err := s.AppendMessage(session.Message{Role: session.RoleTool, CreatedAt: time.Now().UTC(), Parts: []session.Part{
			{Type: session.PartToolResult, ToolCallID: call.ToolCallID, Output: "ok (re-run after takeover)"},
		}}); err != nil {
			return err
		}
		if err := r.step(ctx, "re-ran %s %s, whose result the dead agent never recorded", call.Name, call.ToolCallID); err != nil {
			return err
		}
	}
	if s.State() == session.StateRunning {
		msg := "Picking up where the previous agent stopped: everything it recorded is here. Wrapping up."
		if err := errors.Join(
			s.AppendMessage(session.TextMessage(session.RoleAssistant, msg, time.Now().UTC())),
			s.AddUsage(session.Usage{InputTokens: 900, OutputTokens: 80}),
		); err != nil {
			return err
		}
		if err := r.step(ctx, "assistant: %q", cli.Truncate(msg, 60)); err != nil {
			return err
		}
	}
	if !s.State().Terminal() {
		if err := r.complete(ctx); err != nil {
			return err
		}
	}
	return r.release(ctx)
}

// danglingToolCall returns the last tool call of the conversation that no
// tool result answers.
func danglingToolCall(s *session.Session) (session.Part, bool) {
	answered := map[string]bool{}
	var last session.Part
	found := false
	for _, m := range s.Conversation() {
		for _, p := range m.Parts {
			switch p.Type {
			case session.PartToolResult:
				answered[p.ToolCallID] = true
			case session.PartToolCall:
				last, found = p, true
			}
		}
	}
	return last, found && !answered[last.ToolCallID]
}

// agentArgs are the command-line arguments that make a demo-agent process
// run a.
func (a *agentScript) args(dir string, takeover bool) []string {
	args := []string{"demo-agent", "--dir", dir, "--id", string(a.id), "--label", a.label,
		"--delay", a.delay.String()}
	if takeover {
		return append(args, "--takeover")
	}
	args = append(args, "--kind", string(a.kind), "--prompt", a.prompt,
		"--turns", fmt.Sprint(a.turns), "--approval-turn", fmt.Sprint(a.approval),
		"--project", a.workspace.Project, "--workdir", a.workspace.Dir, "--branch", a.workspace.Branch)
	for _, k := range slices.Sorted(maps.Keys(a.labels.m)) {
		args = append(args, "--tag", k+"="+a.labels.m[k])
	}
	return args
}
