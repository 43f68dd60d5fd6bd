package session

import (
	"encoding/json"
	"slices"
	"time"
)

// Message is one entry of a session's conversation.
type Message struct {
	Role          Role
	Parts         []Part
	ProviderPhase string    // opaque provider phase label, optional
	CreatedAt     time.Time // optional
}

// Part is one piece of a message. Which fields are meaningful depends on
// Type: text (Text); tool_call (ToolCallID, Name, Input); tool_result
// (ToolCallID, Output, IsError); image and blob (MediaType, Data). Binary
// content goes in Data, never in a string.
type Part struct {
	Type       PartType
	Text       string
	ToolCallID string
	Name       string
	Input      json.RawMessage
	Output     string
	IsError    bool
	MediaType  string
	Data       []byte
}

// Validate reports a message that cannot be part of a conversation.
func (m Message) Validate() error {
	if !m.Role.Valid() {
		return invalidf("message role %q", m.Role)
	}
	if len(m.Parts) == 0 {
		return invalidf("message with role %s has no parts", m.Role)
	}
	for i, p := range m.Parts {
		if err := p.validate(); err != nil {
			return invalidf("message part %d: %v", i, err)
		}
	}
	return nil
}

func (p Part) validate() error {
	switch p.Type {
	case PartText:
	case PartToolCall:
		if p.ToolCallID == "" || p.Name == "" {
			return invalidf("tool_call part needs tool_call_id and name")
		}
		if len(p.Input) > 0 && !json.Valid(p.Input) {
			return invalidf("tool_call %q: input is not valid JSON", p.ToolCallID)
		}
	case PartToolResult:
		if p.ToolCallID == "" {
			return invalidf("tool_result part needs tool_call_id")
		}
	case PartImage, PartBlob:
		if p.MediaType == "" {
			return invalidf("%s part needs media_type", p.Type)
		}
	default:
		return invalidf("part type %q", p.Type)
	}
	return nil
}

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	parts := make([]Part, len(m.Parts))
	for i, p := range m.Parts {
		p.Input = slices.Clone(p.Input)
		p.Data = slices.Clone(p.Data)
		parts[i] = p
	}
	m.Parts = parts
	return m
}

// TextMessage is a convenience constructor for a single-part text message.
func TextMessage(role Role, text string, at time.Time) Message {
	return Message{Role: role, Parts: []Part{{Type: PartText, Text: text}}, CreatedAt: at}
}
