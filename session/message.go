package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"
)

// MaxMessageIDBytes bounds a message's ID, ResponseID and Model.
const MaxMessageIDBytes = 256

// Message is one entry of a session's conversation.
//
// The fields after CreatedAt record what real agents keep about a message
// (schema 2); each is optional and its zero value means "not recorded".
type Message struct {
	Role          Role
	Parts         []Part
	ProviderPhase string    // opaque provider phase label, optional
	CreatedAt     time.Time // optional

	// ID identifies the message within its session: stable across
	// revisions, unique among the conversation's messages when set.
	// Importers keep the source's own ID (a Claude Code line's uuid).
	ID string
	// ResponseID is the provider's ID of the response that produced the
	// message (an Anthropic "msg_…", an OpenAI "resp_…").
	ResponseID string
	// Model is the model that produced the message, when it differs from
	// or refines the session's model selector.
	Model string
	// Usage is the token usage of the response that produced the message.
	// It is a record, not the budget: the session's cumulative Usage (what
	// MaxRunTokens is checked against) grows only through AddUsage.
	Usage *Usage
	// Injected marks a message the agent runtime wrote into the
	// conversation on a person's behalf (context it injects, the expansion
	// of a slash command, hook output) rather than one a person typed or a
	// model produced. An injected user message does not start a turn.
	Injected bool
	// Error, when set, says the message reports a failure instead of model
	// output (an API error the runtime shows as the assistant's reply) and
	// holds the error as the runtime reported it. Tool failures are
	// tool_result parts with IsError instead.
	Error string
	// Compaction marks a message that replaced, for the model, every
	// message before it: a model resuming the conversation sees the last
	// compaction message and what follows it. The earlier messages stay in
	// the conversation (history is never rewritten).
	Compaction *Compaction
}

// Part is one piece of a message. Which fields are meaningful depends on
// Type:
//
//   - text: Text.
//   - reasoning: Text (readable reasoning or its summary), Encrypted (the
//     provider's opaque reasoning content), Signature (the provider's
//     signature over the reasoning). Any of them may be empty: a provider
//     may keep only the signature or only the ciphertext.
//   - tool_call: ToolCallID, Name, Input (JSON), ProviderExecuted.
//   - tool_result: ToolCallID, Output (the text result), IsError, Content
//     (nested text, image and blob parts, when the result is more than
//     text), Result (a structured JSON result beside the text, such as an
//     exit code), ProviderExecuted.
//   - image and blob: MediaType and Data, or URL (a reference, for which
//     MediaType is optional).
//
// A field set on a part type it is not meaningful for is invalid. Binary
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

	URL              string
	Signature        string
	Encrypted        string
	ProviderExecuted bool
	Content          []Part
	Result           json.RawMessage

	// Ref, when set, stands for the part's content kept out of line and
	// not loaded: a store that keeps large content apart returns parts
	// this way when asked to load without it. The field it names is then
	// empty. Loading the content clears Ref.
	Ref *ContentRef
}

// ContentRef names part content kept out of line: which field it fills
// (ContentText, ContentOutput, ContentData or ContentEncrypted), and the
// SHA-256 (64 lower-case hex digits) and byte size of that content (a
// string's UTF-8 bytes, or Data).
type ContentRef struct {
	Field  string
	SHA256 string
	Size   int64
}

// The fields a ContentRef may stand for.
const (
	ContentText      = "text"
	ContentOutput    = "output"
	ContentData      = "data"
	ContentEncrypted = "encrypted"
)

// validateRef checks a part's ContentRef against its type.
func (p Part) validateRef() error {
	r := p.Ref
	if r == nil {
		return nil
	}
	var empty bool
	switch r.Field {
	case ContentText:
		empty = p.Text == "" && (p.Type == PartText || p.Type == PartReasoning)
	case ContentOutput:
		empty = p.Output == "" && p.Type == PartToolResult
	case ContentData:
		empty = len(p.Data) == 0 && p.URL == "" && (p.Type == PartImage || p.Type == PartBlob)
	case ContentEncrypted:
		empty = p.Encrypted == "" && p.Type == PartReasoning
	default:
		return invalidf("%s part: content reference to field %q", p.Type, r.Field)
	}
	if !empty {
		return invalidf("%s part: a content reference to %s on a part whose %s is set, or that has no such field", p.Type, r.Field, r.Field)
	}
	if len(r.SHA256) != 64 || strings.Trim(r.SHA256, "0123456789abcdef") != "" {
		return invalidf("%s part: content reference with SHA-256 %q", p.Type, r.SHA256)
	}
	if r.Size < 0 {
		return invalidf("%s part: content reference of %d bytes", p.Type, r.Size)
	}
	return nil
}

// Validate reports a message that cannot be part of a conversation.
func (m Message) Validate() error {
	if !m.Role.Valid() {
		return invalidf("message role %q", m.Role)
	}
	if len(m.Parts) == 0 {
		return invalidf("message with role %s has no parts", m.Role)
	}
	for _, f := range [...]struct{ name, v string }{{"id", m.ID}, {"response_id", m.ResponseID}, {"model", m.Model}} {
		if len(f.v) > MaxMessageIDBytes {
			return invalidf("message %s is %d bytes (at most %d)", f.name, len(f.v), MaxMessageIDBytes)
		}
	}
	if m.Usage != nil {
		if err := m.Usage.validate(); err != nil {
			return err
		}
	}
	if m.Compaction != nil {
		if err := m.Compaction.validate(); err != nil {
			return err
		}
	}
	for i, p := range m.Parts {
		if err := p.validate(false); err != nil {
			return invalidf("message part %d: %v", i, err)
		}
	}
	return nil
}

func (p Part) validate(nested bool) error {
	if err := p.validateRef(); err != nil {
		return err
	}
	// The fields schema 1 had keep their leniency (a text part may carry a
	// tool_call_id, say); the fields schema 2 adds are checked against the
	// part type, so that a value is never stored where nothing reads it.
	added := [...]struct {
		name string
		set  bool
	}{
		{"url", p.URL != ""}, {"signature", p.Signature != ""}, {"encrypted", p.Encrypted != ""},
		{"provider_executed", p.ProviderExecuted}, {"content", len(p.Content) > 0}, {"result", len(p.Result) > 0},
	}
	var allowed []string
	switch p.Type {
	case PartText:
	case PartReasoning:
		allowed = []string{"signature", "encrypted"}
	case PartToolCall:
		if p.ToolCallID == "" || p.Name == "" {
			return invalidf("tool_call part needs tool_call_id and name")
		}
		if len(p.Input) > 0 && !json.Valid(p.Input) {
			return invalidf("tool_call %q: input is not valid JSON", p.ToolCallID)
		}
		allowed = []string{"provider_executed"}
	case PartToolResult:
		if p.ToolCallID == "" {
			return invalidf("tool_result part needs tool_call_id")
		}
		if len(p.Result) > 0 && !json.Valid(p.Result) {
			return invalidf("tool_result %q: result is not valid JSON", p.ToolCallID)
		}
		for i, c := range p.Content {
			if c.Type != PartText && c.Type != PartImage && c.Type != PartBlob {
				return invalidf("tool_result %q: content part %d has type %q (text, image or blob only)", p.ToolCallID, i, c.Type)
			}
			if err := c.validate(true); err != nil {
				return invalidf("tool_result %q: content part %d: %v", p.ToolCallID, i, err)
			}
		}
		allowed = []string{"provider_executed", "content", "result"}
	case PartImage, PartBlob:
		if p.MediaType == "" && p.URL == "" {
			return invalidf("%s part needs media_type (or a url)", p.Type)
		}
		if p.URL != "" && len(p.Data) > 0 {
			return invalidf("%s part has both data and a url", p.Type)
		}
		allowed = []string{"url"}
	default:
		return invalidf("part type %q", p.Type)
	}
	if nested && len(p.Content) > 0 {
		return invalidf("nested %s part has content of its own", p.Type)
	}
	for _, f := range added {
		if f.set && !slices.Contains(allowed, f.name) {
			return invalidf("%s part has %s, which only other part types use", p.Type, f.name)
		}
	}
	return nil
}

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	m.Parts = cloneParts(m.Parts)
	m.Usage, m.Compaction = copyOf(m.Usage), copyOf(m.Compaction)
	return m
}

// CloneMessages returns a deep copy of ms (Clone of each message), the
// messages' parts in one allocation: a copy of a whole conversation
// costs two allocations and its parts' own slices, not one per message.
func CloneMessages(ms []Message) []Message {
	out := make([]Message, len(ms))
	n := 0
	for i := range ms {
		n += len(ms[i].Parts)
	}
	parts := make([]Part, n)
	for i, m := range ms {
		if m.Parts != nil {
			k := len(m.Parts)
			m.Parts = cloneInto(parts[:k:k], m.Parts)
			parts = parts[k:]
		}
		m.Usage, m.Compaction = copyOf(m.Usage), copyOf(m.Compaction)
		out[i] = m
	}
	return out
}

func cloneParts(parts []Part) []Part {
	if parts == nil {
		return nil
	}
	return cloneInto(make([]Part, len(parts)), parts)
}

// cloneInto copies parts deeply into out, as long as parts, and returns
// it.
func cloneInto(out, parts []Part) []Part {
	for i, p := range parts {
		p.Input = slices.Clone(p.Input)
		p.Data = slices.Clone(p.Data)
		p.Result = slices.Clone(p.Result)
		p.Content = cloneParts(p.Content)
		p.Ref = copyOf(p.Ref)
		out[i] = p
	}
	return out
}

// Equal reports whether m and n say the same thing: every field equal,
// times equal as instants, raw JSON equal once compacted, and an empty
// slice equal to a nil one. It is the equality a round trip through a
// snapshot or another tool's format preserves.
func (m Message) Equal(n Message) bool {
	if m.Role != n.Role || m.ProviderPhase != n.ProviderPhase || !m.CreatedAt.Equal(n.CreatedAt) ||
		m.ID != n.ID || m.ResponseID != n.ResponseID || m.Model != n.Model ||
		m.Injected != n.Injected || m.Error != n.Error {
		return false
	}
	if (m.Usage == nil) != (n.Usage == nil) || m.Usage != nil && *m.Usage != *n.Usage {
		return false
	}
	if (m.Compaction == nil) != (n.Compaction == nil) || m.Compaction != nil && *m.Compaction != *n.Compaction {
		return false
	}
	return partsEqual(m.Parts, n.Parts)
}

func partsEqual(a, b []Part) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		p, q := a[i], b[i]
		if p.Type != q.Type || p.Text != q.Text || p.ToolCallID != q.ToolCallID || p.Name != q.Name ||
			p.Output != q.Output || p.IsError != q.IsError || p.MediaType != q.MediaType ||
			!bytes.Equal(p.Data, q.Data) || p.URL != q.URL || p.Signature != q.Signature ||
			p.Encrypted != q.Encrypted || p.ProviderExecuted != q.ProviderExecuted ||
			!rawEqual(p.Input, q.Input) || !rawEqual(p.Result, q.Result) || !partsEqual(p.Content, q.Content) ||
			(p.Ref == nil) != (q.Ref == nil) || p.Ref != nil && *p.Ref != *q.Ref {
			return false
		}
	}
	return true
}

// rawEqual reports whether a and b are the same JSON value: the same
// bytes once compacted, or values that decode alike (a string written
// with or without escapes, say).
func rawEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	if bytes.Equal(ca.Bytes(), cb.Bytes()) {
		return true
	}
	va, okA := decodeJSON(a)
	vb, okB := decodeJSON(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

func decodeJSON(raw json.RawMessage) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers compare as written, beyond float precision
	var v any
	return v, dec.Decode(&v) == nil
}

// TextMessage is a convenience constructor for a single-part text message.
func TextMessage(role Role, text string, at time.Time) Message {
	return Message{Role: role, Parts: []Part{{Type: PartText, Text: text}}, CreatedAt: at}
}
