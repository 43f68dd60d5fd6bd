package codex_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

const transcripts = "../../../shared/transcripts"

func files(t testing.TB) []string {
	dir := filepath.Join(importtest.Transcripts(t, transcripts), "codex")
	return importtest.Files(t, dir, "*.jsonl")
}

func parse(t testing.TB, data []byte) *importer.Transcript {
	t.Helper()
	tr, err := codex.Parse(bytes.NewReader(data), codex.Options{})
	require.NoError(t, err)
	require.True(t, tr.Report.Balanced(), "every line is used or skipped: %+v", tr.Report)
	return tr
}

// expect is what a rollout holds, read independently of the converter
// with plain maps and the rules FORMATS.md states: the response items are
// the history; a model response's items (reasoning, messages, calls) make
// one assistant message, which its token_count closes; calls and outputs
// pair by call_id; user_message events are what a person typed;
// token_count totals are cumulative, so a count whose total did not move
// is a repeat.
type expect struct {
	roles                  map[session.Role]int
	calls, outputs         []string
	reasoning, encrypted   int
	texts                  int
	structured, failures   int
	usage                  session.Usage
	prompts                int
	threadID, model, cwd   string
	branch, remote, effort string
}

func readIndependently(data []byte) expect {
	e := expect{roles: map[session.Role]int{}}
	open, phase := false, ""
	var lastTotal map[string]any
	num := func(m map[string]any, k string) int64 { f, _ := m[k].(float64); return int64(f) }
	for _, line := range bytes.Split(data, []byte("\n")) {
		var o map[string]any
		if json.Unmarshal(line, &o) != nil {
			continue
		}
		p, _ := o["payload"].(map[string]any)
		switch o["type"] {
		case "session_meta":
			e.threadID, _ = p["id"].(string)
			e.cwd, _ = p["cwd"].(string)
			git, _ := p["git"].(map[string]any)
			e.branch, _ = git["branch"].(string)
			e.remote, _ = git["repository_url"].(string)
		case "turn_context":
			if e.model == "" {
				e.model, _ = p["model"].(string)
				e.effort, _ = p["effort"].(string)
			}
		case "response_item":
			typ, _ := p["type"].(string)
			assistantSide := false
			switch typ {
			case "message":
				switch p["role"] {
				case "user":
					e.roles[session.RoleUser]++
					open = false
				case "developer":
					e.roles[session.RoleSystem]++
					open = false
				case "assistant":
					assistantSide = true
					e.texts += len(p["content"].([]any))
					if ph, _ := p["phase"].(string); open && phase != "" && ph != "" && ph != phase {
						open = false // a new phase is a new message
					}
				}
			case "reasoning":
				assistantSide = true
				e.reasoning++
				if enc, _ := p["encrypted_content"].(string); enc != "" {
					e.encrypted++
				}
			case "function_call", "custom_tool_call":
				assistantSide = true
				e.calls = append(e.calls, p["call_id"].(string))
			case "web_search_call":
				assistantSide = true
				e.calls = append(e.calls, "web")
			case "function_call_output", "custom_tool_call_output":
				e.outputs = append(e.outputs, p["call_id"].(string))
				e.roles[session.RoleTool]++
				open = false
			}
			if assistantSide && !open {
				open, phase = true, ""
				e.roles[session.RoleAssistant]++
			}
			if ph, _ := p["phase"].(string); typ == "message" && ph != "" {
				phase = ph
			}
		case "event_msg":
			switch p["type"] {
			case "token_count":
				open = false
				info, _ := p["info"].(map[string]any)
				if info == nil {
					continue
				}
				total, _ := info["total_token_usage"].(map[string]any)
				if lastTotal != nil && jsonEqual(total, lastTotal) {
					continue
				}
				lastTotal = total
				last := info["last_token_usage"].(map[string]any)
				e.usage = e.usage.Add(session.Usage{InputTokens: num(last, "input_tokens") - num(last, "cached_input_tokens"),
					CacheReadTokens: num(last, "cached_input_tokens"), OutputTokens: num(last, "output_tokens")})
			case "user_message":
				e.prompts++
			case "exec_command_end":
				e.structured++
				if num(p, "exit_code") != 0 {
					e.failures++
				}
			case "patch_apply_end":
				e.structured++
				if p["success"] == false {
					e.failures++
				}
			}
		}
	}
	return e
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestImportRealTranscripts imports every Codex rollout and checks the
// session against the rollout as read independently.
func TestImportRealTranscripts(t *testing.T) {
	for _, path := range files(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			tr := parse(t, data)
			want := readIndependently(data)

			require.Equal(t, int64(bytes.Count(data, []byte("\n"))), tr.Report.Lines)
			require.Equal(t, int64(len(data)), tr.Report.Bytes)
			require.Equal(t, want.threadID, tr.SourceID)
			require.Equal(t, want.model, tr.ModelID)
			require.Equal(t, want.effort, tr.ReasoningEffort)
			require.Equal(t, want.cwd, tr.Workspace.Project)
			require.Equal(t, want.branch, tr.Workspace.Branch)
			require.Equal(t, want.remote, tr.Labels[codex.LabelGitRemote])

			s, revisions := importtest.Build(t, tr)
			conv := s.Conversation()
			roles := map[session.Role]int{}
			var calls, outputs []string
			var reasoning, encrypted, texts, structured, failures, injected int
			var perMessage session.Usage
			for _, m := range conv {
				roles[m.Role]++
				if m.Injected {
					injected++
				}
				if m.Usage != nil {
					perMessage = perMessage.Add(*m.Usage)
				}
				for _, p := range m.Parts {
					switch p.Type {
					case session.PartToolCall:
						if p.ProviderExecuted {
							calls = append(calls, "web")
						} else {
							calls = append(calls, p.ToolCallID)
						}
					case session.PartToolResult:
						outputs = append(outputs, p.ToolCallID)
						if len(p.Result) > 0 {
							structured++
						}
						if p.IsError {
							failures++
						}
					case session.PartReasoning:
						reasoning++
						if p.Encrypted != "" {
							encrypted++
						}
					case session.PartText:
						if m.Role == session.RoleAssistant {
							texts++
						}
					}
				}
			}
			require.Equal(t, want.roles, roles)
			require.Equal(t, want.calls, calls)
			require.Equal(t, want.outputs, outputs)
			require.Equal(t, want.reasoning, reasoning)
			require.Equal(t, want.encrypted, encrypted)
			require.Equal(t, want.texts, texts)
			require.Equal(t, want.structured, structured, "each tool run's event is its call's structured result")
			require.Equal(t, want.failures, failures)
			require.Equal(t, want.usage, perMessage)
			require.Equal(t, want.usage, s.Usage())
			require.Equal(t, int64(want.prompts), s.Counters().Turns)
			require.Equal(t, want.roles[session.RoleUser]-want.prompts, injected, "user messages no person typed are injected")
			require.Equal(t, int64(len(want.calls)), s.Counters().ToolCalls)
			require.GreaterOrEqual(t, revisions, want.prompts)

			importtest.CheckPairing(t, conv)
			title, prov := s.Title()
			require.NotEmpty(t, title)
			require.Equal(t, session.TitleFirstPrompt, prov)
			require.Equal(t, codex.Tool, s.Origin().Tool)
		})
	}
}

// TestDamagedCopies imports damaged copies of every rollout: the damage is
// reported, nothing fails, and the conversation is the clean one (or, for
// a torn last line, the one without that line).
func TestDamagedCopies(t *testing.T) {
	for _, path := range files(t) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		clean := parse(t, data)
		copies, want := importtest.Damaged(data)
		for name, damaged := range copies {
			t.Run(filepath.Base(path)+"/"+name, func(t *testing.T) {
				tr := parse(t, damaged)
				require.Equal(t, int64(len(damaged)), tr.Report.Bytes)
				if reason := want[name]; reason != "" {
					require.Positive(t, tr.Report.Skipped[reason], "the damage is reported as %s", reason)
				}
				reference := clean
				switch name {
				case "torn-last-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipTorn])
					lines := bytes.SplitAfter(data, []byte("\n"))
					reference = parse(t, bytes.Join(lines[:len(lines)-2], nil))
				case "garbage-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipInvalidJSON])
				case "duplicated-tail":
					added := tr.Report.Lines - clean.Report.Lines
					require.Equal(t, added, tr.Report.Skipped[importer.SkipDuplicate]-clean.Report.Skipped[importer.SkipDuplicate],
						"every line written again is a duplicate")
				}
				importtest.SameConversation(t, reference.Messages, tr.Messages, name)
			})
		}
	}
}

// TestPreEnvelopeRollout reads the oldest rollout shape: a bare meta
// line, state markers, and bare response items.
func TestPreEnvelopeRollout(t *testing.T) {
	src := `{"id":"0f1e2d3c","timestamp":"2025-06-01T10:00:00Z","instructions":"be brief","git":{"branch":"main"}}
{"record_type":"state"}
{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}
{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}
{"type":"function_call_output","call_id":"c1","output":"a.go\nb.go"}
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two files."}]}
`
	tr := parse(t, []byte(src))
	require.Equal(t, "0f1e2d3c", tr.SourceID)
	require.Equal(t, "main", tr.Workspace.Branch)
	require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipNotConversation])
	roles := []session.Role{}
	for _, m := range tr.Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []session.Role{session.RoleUser, session.RoleAssistant, session.RoleTool, session.RoleAssistant}, roles)
	require.JSONEq(t, `{"command":["ls"]}`, string(tr.Messages[1].Parts[0].Input))
	s, _ := importtest.Build(t, tr)
	require.Equal(t, "list files", func() string { title, _ := s.Title(); return title }())
}

// TestCompactionAndSubagent reads a remote compaction (the replacement
// history follows the compaction message), an error event, and a
// sub-agent's meta.
func TestCompactionAndSubagent(t *testing.T) {
	src := `{"timestamp":"2026-05-11T08:00:00Z","type":"session_meta","payload":{"id":"child-1","cwd":"/w","source":{"subagent":{"thread_spawn":{"parent_thread_id":"parent-1","depth":1,"agent_role":"worker"}}}}}
{"timestamp":"2026-05-11T08:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}}
{"timestamp":"2026-05-11T08:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"do it"}}
{"timestamp":"2026-05-11T08:00:02Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]},{"type":"compaction","encrypted_content":"gAAA"}]}}
{"timestamp":"2026-05-11T08:00:03Z","type":"event_msg","payload":{"type":"error","message":"stream disconnected"}}
`
	tr := parse(t, []byte(src))
	require.NotNil(t, tr.Link)
	require.Equal(t, "parent-1", tr.Link.ParentSourceID)
	require.Equal(t, "worker", tr.Link.Role)
	require.Len(t, tr.Messages, 4)
	c := tr.Messages[1]
	require.NotNil(t, c.Compaction)
	require.Equal(t, "gAAA", c.Parts[0].Encrypted)
	require.Equal(t, "do it", tr.Messages[2].Parts[0].Text, "the kept history follows the compaction")
	require.Equal(t, "stream disconnected", tr.Messages[3].Error)

	parent := parse(t, []byte(`{"timestamp":"2026-05-11T07:00:00Z","type":"session_meta","payload":{"id":"parent-1","cwd":"/w"}}
{"timestamp":"2026-05-11T07:00:01Z","type":"event_msg","payload":{"type":"collab_agent_spawn_end","call_id":"call-9","new_thread_id":"child-1"}}
`))
	roots := importer.Nest([]*importer.Transcript{tr, parent})
	require.Equal(t, []*importer.Transcript{parent}, roots)
	require.Equal(t, "call-9", tr.Link.ToolCallID)
	cfg := tr.Config("child", importtest.Env)
	require.Equal(t, session.KindSubagent, cfg.Kind)
	require.Equal(t, session.SessionRelationship{Role: "worker", ToolCallID: "call-9"}, cfg.Relationship)
}

// FuzzParse feeds arbitrary lines: the converter never panics, counts every
// line once, and produces a transcript whose revisions are valid sessions.
func FuzzParse(f *testing.F) {
	if dir := importtest.Lookup(transcripts); dir != "" {
		importtest.Seeds(f, filepath.Join(dir, "codex"), "*.jsonl")
	}
	f.Add([]byte(`{"type":"message","role":"assistant","id":"x","content":[{"type":"output_text","text":"a"}]}` + "\n" +
		`{"type":"message","role":"assistant","id":"x","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBO"}]}`))
	f.Add([]byte(`{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"cached_input_tokens":9}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := codex.Parse(bytes.NewReader(data), codex.Options{MaxLineBytes: 1 << 16})
		require.NoError(t, err)
		require.True(t, tr.Report.Balanced(), "%+v", tr.Report)
		require.Equal(t, int64(len(data)), tr.Report.Bytes)
		lines := int64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		require.Equal(t, lines, tr.Report.Lines)
		importtest.Build(t, tr)
	})
}
