package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore/internal/onejson"
	"github.com/sessionstore/sessionstore/session"
)

// An Agents SDK item (an input or output item of the OpenAI Agents SDK's
// Session: a message, a function call, its output, reasoning, …) is
// arbitrary JSON that must come back exactly as it was added. It is
// stored as one message of two parts:
//
//   - a blob part of media type ItemMediaType whose data is the item's
//     JSON, compacted (so it round-trips: what comes back is the same
//     JSON value, key order and numbers as written);
//   - before it, when the item holds any, a text part of its text: every
//     string under the keys itemTextKeys names, anywhere in the item, one
//     per line, so that search finds what the item says.
//
// The message's role is the item's role (user, assistant, system;
// developer is system), tool for an item whose type ends in "_output" or
// "_result" (a tool's result: the Python SDK's function_call_output, the
// TypeScript SDK's function_call_result), assistant for any other item (a
// call, reasoning).
// A message that holds no item part (one a Go agent, the CLI or an
// import wrote) reads as an easy input message, {"role", "content"} of
// its text (role user for a tool message, which the SDK has no role
// for).

// ItemMediaType is the media type of the part holding an item's JSON.
const ItemMediaType = "application/vnd.openai-agents.item+json"

// MaxItemDepth bounds how deep an item's JSON nests.
const MaxItemDepth = 64

// itemTextKeys are the keys whose string values are an item's text.
var itemTextKeys = map[string]bool{
	"text": true, "content": true, "output": true, "arguments": true,
	"refusal": true, "transcript": true, "summary": true,
}

// errItem is the cause of an item refused.
var errItem = errors.New("not an Agents SDK item")

// MessageOfItem returns the message that stores item, created at at.
// An item that is not a JSON object, is not valid UTF-8 or nests deeper
// than MaxItemDepth is refused.
func MessageOfItem(item json.RawMessage, at time.Time) (session.Message, error) {
	if !utf8.Valid(item) {
		return session.Message{}, fmt.Errorf("%w: invalid UTF-8", errItem)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, item); err != nil {
		return session.Message{}, fmt.Errorf("%w: %w", errItem, err)
	}
	dec := json.NewDecoder(bytes.NewReader(compact.Bytes()))
	dec.UseNumber()
	var v any
	if err := onejson.Decode(dec, &v); err != nil {
		return session.Message{}, fmt.Errorf("%w: %w", errItem, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return session.Message{}, fmt.Errorf("%w: a JSON object is expected, not %s", errItem, kindOf(v))
	}
	var text []string
	if err := collectText(obj, 0, &text); err != nil {
		return session.Message{}, err
	}
	m := session.Message{Role: itemRole(obj), CreatedAt: at}
	if t := strings.Join(text, "\n"); t != "" {
		m.Parts = append(m.Parts, session.Part{Type: session.PartText, Text: t})
	}
	m.Parts = append(m.Parts, session.Part{Type: session.PartBlob, MediaType: ItemMediaType, Data: compact.Bytes()})
	return m, nil
}

// ItemOfMessage returns the item m stores, or, for a message that holds
// none, the easy input message of its text.
func ItemOfMessage(m session.Message) json.RawMessage {
	for _, p := range m.Parts {
		if p.Type == session.PartBlob && p.MediaType == ItemMediaType && len(p.Data) > 0 && json.Valid(p.Data) {
			return json.RawMessage(p.Data)
		}
	}
	role := m.Role
	if role == session.RoleTool {
		role = session.RoleUser
	}
	var text []string
	for _, p := range m.Parts {
		switch {
		case p.Text != "":
			text = append(text, p.Text)
		case p.Output != "":
			text = append(text, p.Output)
		}
	}
	b, _ := json.Marshal(struct {
		Role    session.Role `json:"role"`
		Content string       `json:"content"`
	}{role, strings.Join(text, "\n")}) // strings and a role: always encodes
	return b
}

func itemRole(obj map[string]any) session.Role {
	switch r, _ := obj["role"].(string); r {
	case "user":
		return session.RoleUser
	case "assistant":
		return session.RoleAssistant
	case "system", "developer":
		return session.RoleSystem
	}
	if t, _ := obj["type"].(string); strings.HasSuffix(t, "_output") || strings.HasSuffix(t, "_result") {
		return session.RoleTool
	}
	return session.RoleAssistant
}

// collectText appends to text every string under a text key in v, in
// key order within an object.
func collectText(v any, depth int, text *[]string) error {
	if depth > MaxItemDepth {
		return fmt.Errorf("%w: nested deeper than %d", errItem, MaxItemDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, ok := v[k].(string); ok {
				if itemTextKeys[k] && s != "" {
					*text = append(*text, s)
				}
				continue
			}
			if err := collectText(v[k], depth+1, text); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := collectText(e, depth+1, text); err != nil {
				return err
			}
		}
	}
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "another value"
}
