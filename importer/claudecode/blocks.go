package claudecode

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

var knownBlockFields = setOf("type", "text", "thinking", "signature", "data", "id", "name", "input",
	"tool_use_id", "content", "is_error", "source", "caller", "citations", "cache_control", "title", "context")

// blocks converts a message's content (a string or an array of blocks)
// into parts. inAssistant says whose: a tool result in an assistant
// message is one the provider ran.
func (p *parser) blocks(raw json.RawMessage, inAssistant bool) []session.Part {
	var text string
	if importer.Unmarshal(raw, &text) == nil {
		return []session.Part{{Type: session.PartText, Text: text}}
	}
	var list []json.RawMessage
	if importer.Unmarshal(raw, &list) != nil {
		return nil
	}
	var parts []session.Part
	for _, item := range list {
		var b block
		var fields importer.Keys
		if importer.Unmarshal(item, &b) != nil || importer.Unmarshal(item, &fields) != nil {
			p.report.Drop("block (invalid)")
			continue
		}
		part, ok := p.part(b, inAssistant)
		if !ok {
			p.report.Drop("block " + b.Type)
			continue
		}
		for k := range fields {
			if !knownBlockFields[k] {
				p.report.Drop("field block." + b.Type + "." + k)
			}
		}
		parts = append(parts, part)
	}
	return parts
}

func (p *parser) part(b block, inAssistant bool) (session.Part, bool) {
	switch b.Type {
	case "text":
		return session.Part{Type: session.PartText, Text: b.Text}, true
	case "thinking":
		return session.Part{Type: session.PartReasoning, Text: b.Thinking, Signature: b.Signature}, true
	case "redacted_thinking":
		return session.Part{Type: session.PartReasoning, Encrypted: b.Data}, true
	case "tool_use", "server_tool_use", "mcp_tool_use":
		if b.ID == "" || b.Name == "" {
			return session.Part{}, false
		}
		if b.Name == "Task" || b.Name == "Agent" {
			var in struct {
				Prompt       string `json:"prompt"`
				SubagentType string `json:"subagent_type"`
			}
			_ = importer.Unmarshal(b.Input, &in)
			p.calls[b.ID] = taskCall{prompt: in.Prompt, role: in.SubagentType}
		}
		return session.Part{Type: session.PartToolCall, ToolCallID: b.ID, Name: b.Name, Input: importer.RawJSON(b.Input),
			ProviderExecuted: b.Type != "tool_use"}, true
	case "tool_result":
		if b.ToolUseID == "" {
			return session.Part{}, false
		}
		part := session.Part{Type: session.PartToolResult, ToolCallID: b.ToolUseID, IsError: b.IsError}
		var out string
		if importer.Unmarshal(b.Content, &out) == nil {
			part.Output = out
		} else if len(b.Content) > 0 && string(b.Content) != "null" {
			part.Content = p.nested(b.Content)
		}
		return part, true
	case "image", "document":
		if b.Source == nil {
			return session.Part{}, false
		}
		typ := session.PartImage
		if b.Type == "document" {
			typ = session.PartBlob
		}
		switch b.Source.Type {
		case "base64":
			data, err := base64.StdEncoding.DecodeString(b.Source.Data)
			if err != nil || b.Source.MediaType == "" {
				return session.Part{}, false
			}
			return session.Part{Type: typ, MediaType: b.Source.MediaType, Data: data}, true
		case "url":
			if b.Source.URL == "" {
				return session.Part{}, false
			}
			return session.Part{Type: typ, MediaType: b.Source.MediaType, URL: b.Source.URL}, true
		case "text":
			return session.Part{Type: session.PartBlob, MediaType: "text/plain", Data: []byte(b.Source.Data)}, true
		}
		return session.Part{}, false
	}
	// The results of tools the provider ran (web_search_tool_result and
	// the like) sit in the assistant's message.
	if inAssistant && strings.HasSuffix(b.Type, "_tool_result") && b.ToolUseID != "" {
		return session.Part{Type: session.PartToolResult, ToolCallID: b.ToolUseID, ProviderExecuted: true,
			IsError: b.IsError, Result: importer.RawJSON(b.Content)}, true
	}
	return session.Part{}, false
}

// nested converts a tool result's content blocks: text, images and
// documents; other blocks are dropped and counted.
func (p *parser) nested(raw json.RawMessage) []session.Part {
	var list []block
	if importer.Unmarshal(raw, &list) != nil {
		p.report.Drop("tool_result content (invalid)")
		return nil
	}
	var out []session.Part
	for _, b := range list {
		switch b.Type {
		case "text", "image", "document":
			if part, ok := p.part(b, false); ok {
				out = append(out, part)
				continue
			}
		}
		p.report.Drop("block " + b.Type + " in a tool_result")
	}
	return out
}
