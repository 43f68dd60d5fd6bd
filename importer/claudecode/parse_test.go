package claudecode_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

const transcripts = "../../../shared/transcripts"

// files returns every Claude Code file of the real transcripts.
func files(t *testing.T) []string {
	dir := filepath.Join(importtest.Transcripts(t, transcripts), "claude-code")
	return importtest.Files(t, dir, "*.jsonl", "*/*.jsonl", "*/*/subagents/*.jsonl")
}

func parse(t testing.TB, data []byte) *importer.Transcript {
	t.Helper()
	tr, err := claudecode.Parse(bytes.NewReader(data), claudecode.Options{})
	require.NoError(t, err)
	require.True(t, tr.Report.Balanced(), "every line is used or skipped: %+v", tr.Report)
	return tr
}

// expect is what a Claude Code file holds, read independently of the
// converter: plain maps, and the rules FORMATS.md states (lines are
// deduplicated by uuid; the lines of one API response share message.id
// and make one message, until a prompt; usage is the response's last).
type expect struct {
	messages, merged     int
	roles                map[session.Role]int
	toolUses             []string // tool_use ids in order
	toolResults          []string // tool_result tool_use_ids in order
	thinking             int
	images, imageBytes   int
	usage                session.Usage
	prompts              int // human prompts: the turns
	compactions          int
	structured           int // tool results with a toolUseResult
	injected             int
	sessionID, lastModel string
}

func readIndependently(t *testing.T, data []byte) expect {
	e := expect{roles: map[session.Role]int{}}
	seen := map[string]bool{}
	usageOf := map[string]map[string]any{}
	var respOrder []string
	openID := ""
	for _, line := range bytes.Split(data, []byte("\n")) {
		var o map[string]any
		if json.Unmarshal(line, &o) != nil {
			continue
		}
		if u, _ := o["uuid"].(string); u != "" {
			if seen[u] {
				continue
			}
			seen[u] = true
		}
		if o["isSidechain"] == true && o["agentId"] == nil {
			continue // 1.0 inline sidechains are children
		}
		msg, _ := o["message"].(map[string]any)
		switch o["type"] {
		case "user":
			blocks, _ := msg["content"].([]any)
			isTool := false
			for _, b := range blocks {
				bm := b.(map[string]any)
				switch bm["type"] {
				case "tool_result":
					isTool = true
					e.toolResults = append(e.toolResults, bm["tool_use_id"].(string))
					if nested, ok := bm["content"].([]any); ok {
						for _, n := range nested {
							if n.(map[string]any)["type"] == "image" {
								e.countImage(t, n.(map[string]any))
							}
						}
					}
				case "image":
					e.countImage(t, bm)
				}
			}
			e.messages++
			if isTool {
				e.roles[session.RoleTool]++
				if o["toolUseResult"] != nil {
					e.structured++
				}
				continue
			}
			e.roles[session.RoleUser]++
			openID = ""
			switch {
			case o["isCompactSummary"] == true:
				e.compactions++
				e.injected++
			case o["isMeta"] == true:
				e.injected++
			default:
				e.prompts++
			}
		case "assistant":
			id := msg["id"].(string)
			if m, _ := msg["model"].(string); m != "" && m != "<synthetic>" && e.lastModel == "" {
				e.lastModel = m
			}
			if u, ok := msg["usage"].(map[string]any); ok {
				if _, known := usageOf[id]; !known {
					respOrder = append(respOrder, id)
				}
				usageOf[id] = u
			}
			for _, b := range msg["content"].([]any) {
				bm := b.(map[string]any)
				switch bm["type"] {
				case "tool_use":
					e.toolUses = append(e.toolUses, bm["id"].(string))
				case "thinking":
					e.thinking++
				}
			}
			if id == openID {
				e.merged++
				continue
			}
			openID = id
			e.messages++
			e.roles[session.RoleAssistant]++
		case "system":
			if c, _ := o["content"].(string); c != "" && o["subtype"] != "compact_boundary" {
				e.messages++
				e.roles[session.RoleSystem]++
			}
		}
		if s, _ := o["sessionId"].(string); s != "" && e.sessionID == "" {
			e.sessionID = s
		}
	}
	num := func(u map[string]any, k string) int64 { f, _ := u[k].(float64); return int64(f) }
	for _, id := range respOrder {
		u := usageOf[id]
		e.usage = e.usage.Add(session.Usage{InputTokens: num(u, "input_tokens"), OutputTokens: num(u, "output_tokens"),
			CacheReadTokens: num(u, "cache_read_input_tokens"), CacheWriteTokens: num(u, "cache_creation_input_tokens")})
	}
	return e
}

func (e *expect) countImage(t *testing.T, b map[string]any) {
	src := b["source"].(map[string]any)
	data, err := base64.StdEncoding.DecodeString(src["data"].(string))
	require.NoError(t, err)
	e.images++
	e.imageBytes += len(data)
}

// TestImportRealTranscripts imports every Claude Code file and checks the
// session against the file as read independently.
func TestImportRealTranscripts(t *testing.T) {
	for _, path := range files(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			tr := parse(t, data)
			want := readIndependently(t, data)

			require.Equal(t, int64(bytes.Count(data, []byte("\n"))), tr.Report.Lines)
			require.Equal(t, int64(len(data)), tr.Report.Bytes)
			require.Equal(t, want.sessionID, tr.SourceID)
			require.Equal(t, want.lastModel, tr.ModelID)
			require.Equal(t, int64(want.merged), tr.Report.Merged)
			require.Equal(t, tr.Report.Messages, len(tr.Messages))

			s, revisions := importtest.Build(t, tr)
			conv := s.Conversation()
			require.Len(t, conv, want.messages)
			require.GreaterOrEqual(t, revisions, want.prompts, "at least one revision per turn")
			roles := map[session.Role]int{}
			var uses, results []string
			var thinking, images, imageBytes, compactions, structured, injected int
			var perMessage session.Usage
			for _, m := range conv {
				roles[m.Role]++
				if m.Usage != nil {
					perMessage = perMessage.Add(*m.Usage)
				}
				if m.Compaction != nil {
					compactions++
				}
				if m.Injected {
					injected++
				}
				for _, p := range m.Parts {
					switch p.Type {
					case session.PartToolCall:
						if !p.ProviderExecuted {
							uses = append(uses, p.ToolCallID)
						}
					case session.PartToolResult:
						results = append(results, p.ToolCallID)
						if len(p.Result) > 0 {
							structured++
						}
						for _, c := range p.Content {
							if c.Type == session.PartImage {
								images++
								imageBytes += len(c.Data)
							}
						}
					case session.PartReasoning:
						thinking++
					case session.PartImage:
						images++
						imageBytes += len(p.Data)
					}
				}
			}
			require.Equal(t, want.roles, roles)
			require.Equal(t, want.toolUses, uses)
			require.Equal(t, want.toolResults, results)
			require.Equal(t, want.thinking, thinking)
			require.Equal(t, want.images, images)
			require.Equal(t, want.imageBytes, imageBytes)
			require.Equal(t, want.compactions, compactions)
			require.Equal(t, want.structured, structured)
			require.Equal(t, want.injected, injected)
			require.Equal(t, want.usage, perMessage, "per-message usage sums to the responses'")
			require.Equal(t, want.usage, s.Usage(), "the session's usage is the sum of its responses'")
			require.Equal(t, int64(len(want.toolUses)), s.Counters().ToolCalls)
			require.Equal(t, int64(want.prompts), s.Counters().Turns)

			importtest.CheckPairing(t, conv)
			title, prov := s.Title()
			require.NotEmpty(t, title)
			require.Equal(t, session.TitleFirstPrompt, prov)
			require.Equal(t, tr.Workspace, s.Workspace())
			require.NotEmpty(t, s.Workspace().Project)
			o := s.Origin()
			require.Equal(t, claudecode.Tool, o.Tool)
			require.Equal(t, tr.Report.SHA256, o.SHA256)
		})
	}
}

// TestSubagentsLinked loads the 2.1 session with its sub-agent files: the
// sub-agent hangs off the Task call that spawned it, with its agent type
// as its role; the compaction summarizer hangs off no call.
func TestSubagentsLinked(t *testing.T) {
	dir := filepath.Join(importtest.Transcripts(t, transcripts), "claude-code", "v2.1.39-compaction-progress")
	main := importtest.Files(t, dir, "*.jsonl")[0]
	tr, err := claudecode.Load(os.DirFS(dir), filepath.Base(main), claudecode.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Children, 2)

	// Independently: the Task result that names each agent.
	data, err := os.ReadFile(main)
	require.NoError(t, err)
	spawnedBy, roleOf := map[string]string{}, map[string]string{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var o struct {
			ToolUseResult struct {
				AgentID string `json:"agentId"`
			} `json:"toolUseResult"`
		}
		if json.Unmarshal(line, &o) != nil {
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(line, &m)
		msg, _ := m["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			bm := b.(map[string]any)
			if bm["type"] == "tool_use" && bm["name"] == "Task" {
				roleOf[bm["id"].(string)] = bm["input"].(map[string]any)["subagent_type"].(string)
			}
			if bm["type"] == "tool_result" && o.ToolUseResult.AgentID != "" {
				spawnedBy[o.ToolUseResult.AgentID] = bm["tool_use_id"].(string)
			}
		}
	}
	for _, c := range tr.Children {
		require.Equal(t, tr.SourceID, c.SourceID, "a sub-agent's lines carry its parent's session ID")
		require.NotEmpty(t, c.AgentID)
		require.NotNil(t, c.Link)
		if strings.HasPrefix(c.AgentID, "acompact") {
			require.Equal(t, claudecode.RoleCompaction, c.Link.Role)
			require.Empty(t, c.Link.ToolCallID)
			continue
		}
		call := spawnedBy[c.AgentID]
		require.NotEmpty(t, call)
		require.Equal(t, call, c.Link.ToolCallID)
		require.Equal(t, roleOf[call], c.Link.Role)

		cfg := c.Config(c.SessionID(), importtest.Env)
		require.Equal(t, session.KindSubagent, cfg.Kind)
		require.Equal(t, call, cfg.Relationship.ToolCallID)
		child, _ := importtest.Build(t, c)
		require.Equal(t, c.AgentID, child.Origin().AgentID)
		require.NotEqual(t, tr.SessionID(), c.SessionID(), "a sub-agent is a session of its own")
	}
}

// TestDamagedCopies imports damaged copies of every file: the damage is
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
				reference := clean
				if reason := want[name]; reason != "" {
					require.Positive(t, tr.Report.Skipped[reason], "the damage is reported as %s", reason)
				}
				switch name {
				case "torn-last-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipTorn])
					lines := bytes.SplitAfter(data, []byte("\n"))
					reference = parse(t, bytes.Join(lines[:len(lines)-2], nil))
				case "garbage-line":
					require.Equal(t, int64(1), tr.Report.Skipped[importer.SkipInvalidJSON])
				case "duplicated-tail":
					added := tr.Report.Lines - clean.Report.Lines
					require.Positive(t, added)
					require.Equal(t, added, tr.Report.Skipped[importer.SkipDuplicate]-clean.Report.Skipped[importer.SkipDuplicate],
						"every line written again is a duplicate")
				}
				importtest.SameConversation(t, reference.Messages, tr.Messages, name)
			})
		}
	}
}

// FuzzParse feeds arbitrary lines: the converter never panics, counts every
// line once, and produces a transcript whose revisions are valid sessions.
func FuzzParse(f *testing.F) {
	if dir := importtest.Lookup(transcripts); dir != "" {
		importtest.Seeds(f, filepath.Join(dir, "claude-code"), "*.jsonl", "*/*.jsonl", "*/*/subagents/*.jsonl")
	}
	f.Add([]byte(`{"type":"assistant","uuid":"a","message":{"id":"m","content":[{"type":"text","text":"x"}]}}` + "\n" +
		`{"type":"assistant","uuid":"b","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`))
	f.Add([]byte("\ufeff{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\r\n{\"type\":"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := claudecode.Parse(bytes.NewReader(data), claudecode.Options{MaxLineBytes: 1 << 16})
		require.NoError(t, err)
		require.True(t, tr.Report.Balanced(), "%+v", tr.Report)
		require.Equal(t, int64(len(data)), tr.Report.Bytes)
		lines := int64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		require.Equal(t, lines, tr.Report.Lines)
		importtest.Build(t, tr)
		for _, c := range tr.Children {
			importtest.Build(t, c)
		}
	})
}
