package importtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The generators write sessions of realistic shape and size in each
// tool's format, for the tests and benchmarks that import many: prompts,
// responses of several content blocks (thinking, text, tool calls), tool
// results of a few KiB to tens of KiB (file contents, command output),
// now and then an image, and the lines the tools write besides the
// conversation (progress, file history, token counts). The same seed
// gives the same bytes.

// words is the vocabulary of generated text: code and prose alike.
var words = strings.Fields(`the a to of and in is for that it this with on be as are by
func return err nil if else range struct type package import go test file line path
session store record lease append revision snapshot message tool call result error
read write sync close open list load fork import export report count size bytes
we should check whether fix add remove change update run build make sure because`)

type gen struct {
	r  *rand.Rand
	at time.Time
}

func newGen(seed uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		at: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(seed%10000) * time.Hour)}
}

// text is n bytes, about, of words in lines.
func (g *gen) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[g.r.IntN(len(words))])
		if g.r.IntN(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// size is a tool output's size: mostly a few KiB, now and then tens.
func (g *gen) size() int {
	return int(math.Min(60<<10, 300*math.Exp(g.r.NormFloat64()*1.2+2)))
}

func (g *gen) tick() string {
	g.at = g.at.Add(time.Duration(1+g.r.IntN(20)) * time.Second)
	return g.at.Format("2006-01-02T15:04:05.000Z")
}

func (g *gen) uuid() string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", g.r.Uint32(), g.r.Uint32()&0xffff, g.r.Uint32()&0xfff, g.r.Uint32()&0xfff, g.r.Uint64()&0xffffffffffff)
}

func line(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // maps of strings and numbers: cannot fail
}

// GenerateClaudeCode returns a Claude Code transcript of about size bytes,
// and its session ID (its file is named <id>.jsonl).
func GenerateClaudeCode(seed uint64, size int) (id string, data []byte) {
	g := newGen(seed)
	id = g.uuid()
	var b bytes.Buffer
	cwd := fmt.Sprintf("/home/dev/src/project-%d", seed%37)
	var prev any
	env := func(typ string) map[string]any {
		u := g.uuid()
		v := map[string]any{"type": typ, "uuid": u, "parentUuid": prev, "isSidechain": false, "sessionId": id,
			"timestamp": g.tick(), "cwd": cwd, "version": "2.1.39", "userType": "external", "gitBranch": "main"}
		prev = u
		return v
	}
	for turn := 0; b.Len() < size; turn++ {
		u := env("user")
		u["message"] = map[string]any{"role": "user", "content": g.text(40 + g.r.IntN(400))}
		line(&b, u)
		line(&b, map[string]any{"type": "file-history-snapshot", "messageId": u["uuid"], "isSnapshotUpdate": false,
			"snapshot": map[string]any{"messageId": u["uuid"], "trackedFileBackups": map[string]any{}, "timestamp": g.tick()}})
		for step := 0; step < 1+g.r.IntN(6) && b.Len() < size; step++ {
			resp := fmt.Sprintf("msg_%016x", g.r.Uint64())
			usage := map[string]any{"input_tokens": 3 + g.r.IntN(50), "output_tokens": 20 + g.r.IntN(900),
				"cache_read_input_tokens": g.r.IntN(90000), "cache_creation_input_tokens": g.r.IntN(4000)}
			blocks := []map[string]any{{"type": "text", "text": g.text(60 + g.r.IntN(600))}}
			if g.r.IntN(3) == 0 {
				blocks = append([]map[string]any{{"type": "thinking", "thinking": g.text(200 + g.r.IntN(1500)), "signature": base64.StdEncoding.EncodeToString([]byte(g.text(90)))}}, blocks...)
			}
			call := fmt.Sprintf("toolu_%016x", g.r.Uint64())
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": call, "name": "Bash",
				"input": map[string]any{"command": "go test ./" + words[g.r.IntN(len(words))] + "/...", "description": g.text(30)}})
			for _, blk := range blocks { // a response, a line per content block
				a := env("assistant")
				a["requestId"] = "req_" + resp[4:]
				a["message"] = map[string]any{"id": resp, "type": "message", "role": "assistant", "model": "claude-opus-4-6",
					"content": []any{blk}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}
				line(&b, a)
			}
			line(&b, map[string]any{"type": "progress", "uuid": g.uuid(), "parentUuid": prev, "sessionId": id, "timestamp": g.tick(),
				"toolUseID": call, "data": map[string]any{"type": "bash_progress", "output": g.text(80)}})
			out := g.text(g.size())
			r := env("user")
			content := []any{map[string]any{"type": "tool_result", "tool_use_id": call, "content": out, "is_error": g.r.IntN(15) == 0}}
			if g.r.IntN(40) == 0 { // a screenshot the tool returned
				img := make([]byte, 20<<10+g.r.IntN(100<<10))
				for i := range img {
					img[i] = byte(g.r.Uint32())
				}
				content = append(content, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png",
					"data": base64.StdEncoding.EncodeToString(img)}})
			}
			r["message"] = map[string]any{"role": "user", "content": content}
			r["toolUseResult"] = map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false}
			r["sourceToolAssistantUUID"] = prev
			line(&b, r)
		}
		sys := env("system")
		sys["subtype"], sys["durationMs"], sys["isMeta"] = "turn_duration", 1000+g.r.IntN(90000), false
		line(&b, sys)
	}
	return id, b.Bytes()
}

// GenerateCodex returns a Codex rollout of about size bytes, its thread
// ID and its file name (rollout-<time>-<thread>.jsonl).
func GenerateCodex(seed uint64, size int) (thread, name string, data []byte) {
	g := newGen(seed)
	thread = fmt.Sprintf("019e%04x-%04x-7%03x-8%03x-%012x", g.r.Uint32()&0xffff, g.r.Uint32()&0xffff, g.r.Uint32()&0xfff, g.r.Uint32()&0xfff, g.r.Uint64()&0xffffffffffff)
	name = "rollout-" + g.at.Format("2006-01-02T15-04-05") + "-" + thread + ".jsonl"
	var b bytes.Buffer
	put := func(typ string, payload map[string]any) {
		line(&b, map[string]any{"timestamp": g.tick(), "type": typ, "payload": payload})
	}
	cwd := fmt.Sprintf("/home/dev/src/service-%d", seed%23)
	put("session_meta", map[string]any{"id": thread, "timestamp": g.at.Format(time.RFC3339Nano), "cwd": cwd, "originator": "codex_cli_rs",
		"cli_version": "0.125.0", "source": "cli", "model_provider": "openai",
		"git": map[string]any{"branch": "main", "commit_hash": fmt.Sprintf("%040x", g.r.Uint64()), "repository_url": "git@example.com:dev/service.git"}})
	var total [3]int
	for turn := 0; b.Len() < size; turn++ {
		put("turn_context", map[string]any{"turn_id": fmt.Sprintf("turn-%d", turn), "cwd": cwd, "approval_policy": "on-request",
			"sandbox_policy": map[string]any{"type": "workspace-write"}, "model": "gpt-5.5-codex", "effort": "medium", "summary": "auto"})
		prompt := g.text(40 + g.r.IntN(400))
		put("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}})
		put("event_msg", map[string]any{"type": "user_message", "message": prompt, "images": []any{}})
		for step := 0; step < 1+g.r.IntN(6) && b.Len() < size; step++ {
			put("response_item", map[string]any{"type": "reasoning", "summary": []any{}, "content": nil,
				"encrypted_content": base64.StdEncoding.EncodeToString([]byte(g.text(300 + g.r.IntN(900))))})
			call := fmt.Sprintf("call_%016x", g.r.Uint64())
			args, _ := json.Marshal(map[string]any{"cmd": "go test ./...", "workdir": cwd, "yield_time_ms": 1000})
			put("response_item", map[string]any{"type": "function_call", "name": "exec_command", "arguments": string(args), "call_id": call})
			in, out := 1000+g.r.IntN(20000), 20+g.r.IntN(900)
			total[0], total[1], total[2] = total[0]+in, total[1]+out, total[2]+in/2
			put("event_msg", map[string]any{"type": "token_count", "info": map[string]any{
				"total_token_usage": map[string]any{"input_tokens": total[0], "cached_input_tokens": total[2], "output_tokens": total[1]},
				"last_token_usage":  map[string]any{"input_tokens": in, "cached_input_tokens": in / 2, "output_tokens": out}}})
			output := g.text(g.size())
			code := 0
			if g.r.IntN(12) == 0 {
				code = 1
			}
			put("event_msg", map[string]any{"type": "exec_command_end", "call_id": call, "command": []any{"bash", "-lc", "go test ./..."},
				"cwd": cwd, "exit_code": code, "stdout": output, "stderr": "", "aggregated_output": output, "status": "completed"})
			put("response_item", map[string]any{"type": "function_call_output", "call_id": call,
				"output": fmt.Sprintf("Process exited with code %d\nOutput:\n%s", code, output)})
		}
		reply := g.text(60 + g.r.IntN(600))
		put("response_item", map[string]any{"type": "message", "role": "assistant", "phase": "final_answer",
			"content": []any{map[string]any{"type": "output_text", "text": reply}}})
		put("event_msg", map[string]any{"type": "agent_message", "message": reply, "phase": "final_answer"})
	}
	return thread, name, b.Bytes()
}

// SessionSize draws a realistic transcript size for session i of a
// generated corpus: log-normal, a median of about 160 KiB, from 8 KiB to
// 4 MiB.
func SessionSize(seed uint64) int {
	r := rand.New(rand.NewPCG(seed, 7))
	return int(math.Max(8<<10, math.Min(4<<20, 160e3*math.Exp(r.NormFloat64()))))
}

// WriteCorpus writes n generated Claude Code sessions under
// dir/claude-code (a projects directory: ten projects) and m Codex
// rollouts under dir/codex (a sessions directory), of SessionSize each,
// and returns the bytes written.
func WriteCorpus(dir string, n, m int) (int64, error) {
	var total int64
	for i := range n {
		seed := uint64(i + 1)
		id, data := GenerateClaudeCode(seed, SessionSize(seed))
		p := filepath.Join(dir, "claude-code", fmt.Sprintf("-home-dev-src-project-%d", i%10), id+".jsonl")
		if err := writeFile(p, data); err != nil {
			return total, err
		}
		total += int64(len(data))
	}
	for i := range m {
		seed := uint64(100000 + i)
		_, name, data := GenerateCodex(seed, SessionSize(seed))
		p := filepath.Join(dir, "codex", "2026", "03", fmt.Sprintf("%02d", 1+i%28), name)
		if err := writeFile(p, data); err != nil {
			return total, err
		}
		total += int64(len(data))
	}
	return total, nil
}

func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}
