package codex

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

// item is a response_item payload.
type item struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Phase   string          `json:"phase"`
	Content json.RawMessage `json:"-"` // decodeItem sets it
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Encrypted *string         `json:"encrypted_content"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments *string         `json:"arguments"`
	Input     *string         `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
}

// decodeItem decodes a response item. Its content is the member named
// "content" exactly: a key that differs from it only in case (which
// encoding/json would match to a field) is not the content.
func decodeItem(raw json.RawMessage, it *item) error {
	if err := importer.Unmarshal(raw, it); err != nil {
		return err
	}
	it.Content = importer.Member(raw, "content")
	return nil
}

// item converts a response item.
func (p *parser) item(payload json.RawMessage, at time.Time) outcome {
	var it item
	if decodeItem(payload, &it) != nil || it.Type == "" {
		return invalid
	}
	it.ID = p.b.Fit("item id", it.ID)
	if it.ID != "" {
		if p.ids[it.ID] {
			p.report().Drop("repeated item id")
			it.ID = ""
		} else {
			p.ids[it.ID] = true
		}
	}
	switch it.Type {
	case "message":
		parts := p.content(it.Content)
		if len(parts) == 0 {
			return invalid
		}
		switch it.Role {
		case "assistant":
			if p.group >= 0 && p.phase != "" && it.Phase != "" && it.Phase != p.phase {
				p.group = -1 // a new phase is a new message
			}
			m := p.groupMessage(it.ID, at)
			m.Parts = append(m.Parts, parts...)
			if it.Phase != "" {
				p.phase, m.ProviderPhase = it.Phase, it.Phase
			}
		case "user":
			p.group = -1
			p.b.Append(session.Message{ID: it.ID, Role: session.RoleUser, CreatedAt: at, Parts: parts})
		case "developer", "system":
			p.group = -1
			p.b.Append(session.Message{ID: it.ID, Role: session.RoleSystem, CreatedAt: at, Parts: parts})
		default:
			return invalid
		}
	case "reasoning":
		part := session.Part{Type: session.PartReasoning}
		var texts []string
		for _, s := range it.Summary {
			texts = append(texts, s.Text)
		}
		if len(texts) == 0 {
			// Open models write their reasoning itself, not a summary.
			var content []contentItem
			if importer.Unmarshal(it.Content, &content) == nil {
				for _, c := range content {
					texts = append(texts, c.Text)
				}
			}
		}
		part.Text = strings.Join(texts, "\n\n")
		if it.Encrypted != nil {
			part.Encrypted = *it.Encrypted
		}
		m := p.groupMessage(it.ID, at)
		m.Parts = append(m.Parts, part)
	case "function_call", "custom_tool_call", "local_shell_call", "web_search_call":
		part, ok := p.call(&it)
		if !ok {
			return invalid
		}
		m := p.groupMessage(it.ID, at)
		m.Parts = append(m.Parts, part)
	case "function_call_output", "custom_tool_call_output":
		if it.CallID == "" {
			return invalid
		}
		part := session.Part{Type: session.PartToolResult, ToolCallID: it.CallID}
		var out string
		if importer.Unmarshal(it.Output, &out) == nil {
			part.Output = out
		} else if content := p.content(it.Output); len(content) > 0 {
			part.Content = content
		} else if len(bytes.TrimSpace(it.Output)) > 0 && string(bytes.TrimSpace(it.Output)) != "null" {
			return invalid
		}
		p.group = -1
		p.calls[it.CallID] = p.b.Append(session.Message{ID: it.ID, Role: session.RoleTool, CreatedAt: at, Parts: []session.Part{part}})
	case "compaction":
		p.group = -1
		enc := ""
		if it.Encrypted != nil {
			enc = *it.Encrypted
		}
		p.b.Append(session.Message{ID: it.ID, Role: session.RoleAssistant, CreatedAt: at, Compaction: &session.Compaction{},
			Parts: []session.Part{{Type: session.PartReasoning, Encrypted: enc}}})
	case "ghost_snapshot":
		p.report().Skip(importer.SkipNotConversation, "response_item/"+it.Type)
		return counted
	default:
		p.report().Skip(importer.SkipUnknownType, "response_item/"+it.Type)
		return counted
	}
	if it.Namespace != "" {
		p.report().Drop("field " + it.Type + ".namespace")
	}
	return used
}

// contentItem is one entry of a message's content.
type contentItem struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
}

// groupMessage returns the assistant message of the current model
// response, starting one if there is none.
func (p *parser) groupMessage(id string, at time.Time) *session.Message {
	if p.group < 0 {
		p.group = p.b.Append(session.Message{ID: id, Role: session.RoleAssistant, CreatedAt: at, Model: p.model})
		p.phase = ""
	}
	return p.b.Message(p.group)
}

// call converts a tool call item.
func (p *parser) call(it *item) (session.Part, bool) {
	part := session.Part{Type: session.PartToolCall, ToolCallID: it.CallID, Name: it.Name}
	switch it.Type {
	case "function_call":
		if it.Arguments != nil {
			part.Input = p.arguments(*it.Arguments)
		}
	case "custom_tool_call":
		// A custom tool takes free text (apply_patch takes a patch): the
		// input is that text as a JSON string.
		if it.Input != nil {
			part.Input, _ = json.Marshal(*it.Input)
		}
	case "local_shell_call":
		part.Name, part.Input = "local_shell", importer.RawJSON(it.Action)
		if part.ToolCallID == "" {
			part.ToolCallID = it.ID
		}
	case "web_search_call":
		// The provider runs the search; the history keeps no result.
		part.Name, part.Input, part.ProviderExecuted = "web_search", importer.RawJSON(it.Action), true
		if part.ToolCallID == "" {
			part.ToolCallID = it.ID
		}
		p.webSearches++
		if part.ToolCallID == "" {
			part.ToolCallID = "web_search-" + strconv.Itoa(p.webSearches)
		}
	}
	if part.ToolCallID == "" || part.Name == "" {
		return session.Part{}, false
	}
	return part, true
}

// arguments returns a function call's arguments (JSON in a string) as raw
// JSON; arguments that are not JSON are kept as a JSON string.
func (p *parser) arguments(s string) json.RawMessage {
	if raw := importer.RawJSON(json.RawMessage(s)); raw != nil {
		return raw
	}
	if strings.TrimSpace(s) == "" {
		return nil
	}
	p.report().Drop("function_call arguments that are not JSON (kept as a string)")
	b, _ := json.Marshal(s)
	return b
}

// content converts a message's (or a tool output's) content items.
func (p *parser) content(raw json.RawMessage) []session.Part {
	var items []contentItem
	if importer.Unmarshal(raw, &items) != nil {
		return nil
	}
	var parts []session.Part
	for _, c := range items {
		switch c.Type {
		case "input_text", "output_text", "text":
			parts = append(parts, session.Part{Type: session.PartText, Text: c.Text})
		case "refusal":
			parts = append(parts, session.Part{Type: session.PartText, Text: c.Text})
		case "input_image":
			if part, ok := image(c.ImageURL); ok {
				parts = append(parts, part)
				continue
			}
			p.report().Drop("input_image without an image")
		default:
			p.report().Drop("content " + c.Type)
		}
	}
	return parts
}

// image converts an image URL: a data URL's bytes, or the URL itself.
func image(u string) (session.Part, bool) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || mediaType == "" {
			return session.Part{}, false
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return session.Part{}, false
		}
		return session.Part{Type: session.PartImage, MediaType: mediaType, Data: b}, true
	}
	if u == "" {
		return session.Part{}, false
	}
	return session.Part{Type: session.PartImage, URL: u}, true
}
