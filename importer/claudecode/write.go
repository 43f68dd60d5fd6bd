package claudecode

import (
	"crypto/sha1" //nolint:gosec // G505: names lines deterministically, not a security use
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

// WriteOptions adjust Write. The zero value writes a main session file
// whose sessionId is the session's origin's (when it was imported from
// Claude Code) or the session's own ID.
type WriteOptions struct {
	// SessionID is the sessionId every line carries; for a sub-agent's
	// file, its parent's.
	SessionID string
	// AgentID, when set, writes a sub-agent's file (Claude Code 2.x):
	// every line a sidechain with this agentId.
	AgentID string
	// Version is the version lines claim (default: the origin's, or
	// "sessionstore").
	Version string
}

// Write writes the conversation of s to w as a Claude Code transcript
// (JSONL, one line per user, tool or system message and one per content
// block of an assistant message, the way Claude Code writes a response),
// which Parse reads back to the same conversation for a session imported
// from Claude Code. Lines chain through uuid and parentUuid; a message's
// ID is its first line's uuid, and the other lines get IDs derived from it
// that neither another line nor a message of the session has; the lines
// of an assistant message share its response ID as message.id, one no
// other message's lines carry (else one derived from its ID). Whatever IDs
// a session holds, each message comes back as a message of its own.
// A compaction message is written as a compact_boundary followed by its
// summary. A title that is not the first prompt's is written as a summary
// (generated) or custom-title (explicit) line.
func Write(w io.Writer, s *session.Session, opts WriteOptions) error {
	wr := &writer{lw: importer.NewLineWriter(w), s: s, opts: opts, taken: map[string]bool{}, responses: map[string]bool{}}
	wr.opts.SessionID, wr.opts.Version = importer.Claims(s, Tool, wr.opts.SessionID, wr.opts.Version)
	_, model := s.Provider()
	wr.model = model
	conv := s.Conversation()
	for _, m := range conv {
		if m.ID != "" {
			wr.taken[m.ID] = true
		}
	}
	for i, m := range conv {
		wr.message(i, m)
	}
	switch title, prov := s.Title(); prov {
	case session.TitleExplicit:
		wr.put(map[string]any{"type": "custom-title", "customTitle": title, "sessionId": wr.opts.SessionID})
	case session.TitleGenerated:
		wr.put(map[string]any{"type": "summary", "summary": title, "leafUuid": wr.prev})
	}
	if err := wr.lw.Flush(); err != nil {
		return fmt.Errorf("claudecode: write: %w", err)
	}
	return nil
}

type writer struct {
	lw    *importer.LineWriter
	s     *session.Session
	opts  WriteOptions
	model string
	prev  any // the previous line's uuid (nil before the first)
	lines int // conversational lines written

	// A reader takes a line whose uuid it has seen for a copy, and the
	// lines that share a message.id for one response (Parse joins them
	// after a prompt). The IDs a session holds are whatever its writer
	// chose, so the uuids and response IDs derived here are kept apart
	// from them and from each other: taken holds every message ID of the
	// session and every uuid written, responses every message.id written.
	taken, responses map[string]bool
}

// uuid returns an ID derived from parts (derivedUUID) that no line of the
// file has and no message of the session has as its own.
func (wr *writer) uuid(parts ...string) string {
	id := derivedUUID(parts...)
	for n := 1; wr.taken[id]; n++ {
		id = derivedUUID(append(parts, fmt.Sprint("again ", n))...)
	}
	wr.taken[id] = true
	return id
}

// response returns the message.id of the lines of an assistant message
// whose ID is id: its response ID, unless no response ID is recorded or
// an earlier message's lines carry it (they would join this message's);
// then one derived from id.
func (wr *writer) response(id string, m session.Message) string {
	resp := m.ResponseID
	for n := 0; resp == "" || wr.responses[resp]; n++ {
		parts := []string{id, "response"}
		if n > 0 {
			parts = append(parts, fmt.Sprint("again ", n))
		}
		resp = "msg_" + derivedUUID(parts...)
	}
	wr.responses[resp] = true
	return resp
}

func (wr *writer) put(v map[string]any) { wr.lw.Put(v) }

// envelope returns the fields every conversational line carries.
func (wr *writer) envelope(typ, uuid string, at time.Time) map[string]any {
	ws := wr.s.Workspace()
	// The first line's directory is the project's (Parse takes the first
	// one it sees for the project), the others the current one.
	cwd := ws.Dir
	if wr.lines == 0 && ws.Project != "" {
		cwd = ws.Project
	}
	wr.lines++
	v := map[string]any{
		"type": typ, "uuid": uuid, "parentUuid": wr.prev, "isSidechain": wr.opts.AgentID != "",
		"sessionId": wr.opts.SessionID, "timestamp": stamp(at, wr.s.CreatedAt()), "userType": "external",
		"cwd": cwd, "version": wr.opts.Version,
	}
	if ws.Branch != "" {
		v["gitBranch"] = ws.Branch
	}
	if wr.opts.AgentID != "" {
		v["agentId"] = wr.opts.AgentID
	}
	wr.prev = uuid
	return v
}

func stamp(at, fallback time.Time) string {
	if at.IsZero() {
		at = fallback
	}
	return importer.Stamp(at)
}

func (wr *writer) message(i int, m session.Message) {
	id := m.ID
	if id == "" {
		id = wr.uuid(wr.opts.SessionID, fmt.Sprint("message ", i))
	}
	switch m.Role {
	case session.RoleAssistant:
		wr.assistant(id, m)
	case session.RoleSystem:
		v := wr.envelope("system", id, m.CreatedAt)
		v["content"], v["level"], v["isMeta"] = importer.Text(m.Parts), "info", false
		if m.Error != "" {
			v["subtype"], v["error"] = "api_error", map[string]any{"message": m.Error}
		}
		wr.put(v)
	default: // user and tool messages are user lines
		if m.Compaction != nil {
			b := wr.envelope("system", wr.uuid(id, "compact_boundary"), m.CreatedAt)
			b["subtype"], b["content"], b["isMeta"], b["level"] = "compact_boundary", "Conversation compacted", false, "info"
			b["logicalParentUuid"], b["parentUuid"] = b["parentUuid"], nil
			md := map[string]any{}
			if m.Compaction.Trigger != "" {
				md["trigger"] = m.Compaction.Trigger
			}
			if m.Compaction.PreTokens > 0 {
				md["preTokens"] = m.Compaction.PreTokens
			}
			b["compactMetadata"] = md
			wr.put(b)
		}
		v := wr.envelope("user", id, m.CreatedAt)
		v["message"] = map[string]any{"role": "user", "content": userContent(m.Parts)}
		if m.Injected && m.Compaction == nil {
			v["isMeta"] = true
		}
		if m.Role == session.RoleUser {
			v["permissionMode"] = permissionMode(wr.s.Mode())
		}
		if m.Compaction != nil {
			v["isCompactSummary"], v["isVisibleInTranscriptOnly"] = true, true
		}
		for _, p := range m.Parts {
			if p.Type == session.PartToolResult && len(p.Result) > 0 {
				v["toolUseResult"] = p.Result
				v["sourceToolUseID"] = p.ToolCallID
				break // a line carries one structured result
			}
		}
		wr.put(v)
	}
}

// assistant writes one line per part: Claude Code's shape of a response.
func (wr *writer) assistant(id string, m session.Message) {
	resp := wr.response(id, m)
	model := m.Model
	if model == "" {
		model = wr.model
	}
	var usage map[string]any
	if u := m.Usage; u != nil {
		usage = map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens}
	}
	calls := map[string]string{}
	for j, p := range m.Parts {
		if p.Type == session.PartToolCall {
			calls[p.ToolCallID] = p.Name
		}
		uuid := id
		if j > 0 {
			uuid = wr.uuid(id, fmt.Sprint("block ", j))
		}
		v := wr.envelope("assistant", uuid, m.CreatedAt)
		msg := map[string]any{"id": resp, "type": "message", "role": "assistant", "model": model,
			"content": []any{assistantBlock(p, calls)}, "stop_reason": nil, "stop_sequence": nil}
		if usage != nil {
			msg["usage"] = usage
		}
		v["message"] = msg
		if m.Error != "" {
			v["isApiErrorMessage"] = true
		}
		wr.put(v)
	}
}

func assistantBlock(p session.Part, calls map[string]string) map[string]any {
	switch p.Type {
	case session.PartReasoning:
		if p.Text == "" && p.Signature == "" && p.Encrypted != "" {
			return map[string]any{"type": "redacted_thinking", "data": p.Encrypted}
		}
		return map[string]any{"type": "thinking", "thinking": p.Text, "signature": p.Signature}
	case session.PartToolCall:
		typ := "tool_use"
		if p.ProviderExecuted {
			typ = "server_tool_use"
		}
		input := p.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		return map[string]any{"type": typ, "id": p.ToolCallID, "name": p.Name, "input": input}
	case session.PartToolResult:
		name := calls[p.ToolCallID]
		if name == "" {
			name = "server"
		}
		b := map[string]any{"type": name + "_tool_result", "tool_use_id": p.ToolCallID}
		if len(p.Result) > 0 {
			b["content"] = p.Result
		}
		if p.IsError {
			b["is_error"] = true
		}
		return b
	case session.PartImage, session.PartBlob:
		return mediaBlock(p)
	}
	return map[string]any{"type": "text", "text": p.Text}
}

// userContent is a user line's content: a lone text as a string, as Claude
// Code writes a typed prompt, otherwise blocks.
func userContent(parts []session.Part) any {
	if len(parts) == 1 && parts[0].Type == session.PartText {
		return parts[0].Text
	}
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case session.PartToolResult:
			b := map[string]any{"type": "tool_result", "tool_use_id": p.ToolCallID}
			if len(p.Content) > 0 {
				nested := make([]any, 0, len(p.Content))
				for _, c := range p.Content {
					if c.Type == session.PartText {
						nested = append(nested, map[string]any{"type": "text", "text": c.Text})
					} else {
						nested = append(nested, mediaBlock(c))
					}
				}
				b["content"] = nested
			} else {
				b["content"] = p.Output
			}
			if p.IsError {
				b["is_error"] = true
			}
			out = append(out, b)
		case session.PartImage, session.PartBlob:
			out = append(out, mediaBlock(p))
		default:
			out = append(out, map[string]any{"type": "text", "text": p.Text})
		}
	}
	return out
}

func mediaBlock(p session.Part) map[string]any {
	typ := "image"
	if p.Type == session.PartBlob {
		typ = "document"
	}
	if p.URL != "" {
		src := map[string]any{"type": "url", "url": p.URL}
		if p.MediaType != "" {
			src["media_type"] = p.MediaType
		}
		return map[string]any{"type": typ, "source": src}
	}
	return map[string]any{"type": typ, "source": map[string]any{"type": "base64", "media_type": p.MediaType,
		"data": base64.StdEncoding.EncodeToString(p.Data)}}
}

// derivedUUID returns a UUID-shaped ID that is a function of its inputs,
// so that writing the same session twice gives the same lines.
func derivedUUID(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00"))) //nolint:gosec // G401: see the import
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// permissionMode is the Claude Code name of a permission mode.
func permissionMode(m session.PermissionMode) string {
	switch m {
	case session.ModePlan:
		return "plan"
	case session.ModeAcceptEdits:
		return "acceptEdits"
	case session.ModeBypass:
		return "bypassPermissions"
	}
	return "default"
}
