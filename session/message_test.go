package session

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// richMessage sets every message and part field schema 2 adds.
func richMessage() Message {
	return Message{
		ID: "m1", Role: RoleAssistant, ResponseID: "msg_01", Model: "claude-opus", CreatedAt: epoch,
		Usage: &Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4},
		Parts: []Part{
			{Type: PartReasoning, Text: "thinking", Signature: "sig", Encrypted: "gAAA"},
			{Type: PartToolCall, ToolCallID: "c1", Name: "web_search", Input: json.RawMessage(`{"q":"x"}`), ProviderExecuted: true},
			{Type: PartToolResult, ToolCallID: "c1", ProviderExecuted: true, Result: json.RawMessage(`{"hits":1}`),
				Content: []Part{{Type: PartText, Text: "hit"}, {Type: PartImage, MediaType: "image/png", Data: []byte{1, 2}}, {Type: PartImage, URL: "https://e.x/i.png"}}},
		},
	}
}

func TestMessageValidateSchema2(t *testing.T) {
	require.NoError(t, richMessage().Validate())
	require.NoError(t, Message{Role: RoleUser, Injected: true, Parts: []Part{{Type: PartText, Text: "<env/>"}}}.Validate())
	require.NoError(t, Message{Role: RoleAssistant, Error: "API Error: 529", Parts: []Part{{Type: PartText, Text: "API Error: 529"}}}.Validate())
	require.NoError(t, Message{Role: RoleUser, Compaction: &Compaction{Trigger: CompactionAuto, PreTokens: 9}, Parts: []Part{{Type: PartText, Text: "summary"}}}.Validate())
	require.NoError(t, Message{Role: RoleAssistant, Parts: []Part{{Type: PartReasoning}}}.Validate(), "a reasoning part may keep nothing readable")

	tests := []struct {
		name   string
		mutate func(*Message)
	}{
		{"id too long", func(m *Message) { m.ID = strings.Repeat("i", MaxMessageIDBytes+1) }},
		{"model too long", func(m *Message) { m.Model = strings.Repeat("m", MaxMessageIDBytes+1) }},
		{"response id too long", func(m *Message) { m.ResponseID = strings.Repeat("r", MaxMessageIDBytes+1) }},
		{"negative usage", func(m *Message) { m.Usage.OutputTokens = -1 }},
		{"unknown compaction trigger", func(m *Message) { m.Compaction = &Compaction{Trigger: "sometimes"} }},
		{"negative compaction tokens", func(m *Message) { m.Compaction = &Compaction{PreTokens: -1} }},
		{"signature on text", func(m *Message) { m.Parts[0] = Part{Type: PartText, Signature: "s"} }},
		{"encrypted on tool call", func(m *Message) { m.Parts[1].Encrypted = "e" }},
		{"url on text", func(m *Message) { m.Parts[0] = Part{Type: PartText, URL: "u"} }},
		{"content on tool call", func(m *Message) { m.Parts[1].Content = []Part{{Type: PartText}} }},
		{"result on reasoning", func(m *Message) { m.Parts[0].Result = json.RawMessage(`1`) }},
		{"provider_executed on image", func(m *Message) { m.Parts[2].Content[1].ProviderExecuted = true }},
		{"invalid result JSON", func(m *Message) { m.Parts[2].Result = json.RawMessage(`{`) }},
		{"tool call nested in a result", func(m *Message) {
			m.Parts[2].Content = []Part{{Type: PartToolCall, ToolCallID: "c", Name: "n"}}
		}},
		{"results nested twice", func(m *Message) {
			m.Parts[2].Content = []Part{{Type: PartToolResult, ToolCallID: "c", Content: []Part{{Type: PartText}}}}
		}},
		{"nested image without media type", func(m *Message) { m.Parts[2].Content = []Part{{Type: PartImage}} }},
		{"image with data and url", func(m *Message) { m.Parts[2].Content = []Part{{Type: PartImage, URL: "u", Data: []byte{1}}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := richMessage()
			tt.mutate(&m)
			require.ErrorIs(t, m.Validate(), ErrInvalid)
			s := newTestSession(t)
			require.ErrorIs(t, s.AppendMessage(m), ErrInvalid)
			require.Equal(t, 0, s.MessageCount())
		})
	}
}

func TestMessageIDsUnique(t *testing.T) {
	s := newTestSession(t)
	m := TextMessage(RoleUser, "one", epoch)
	m.ID = "u1"
	require.NoError(t, s.AppendMessage(m))
	require.ErrorIs(t, s.AppendMessage(m), ErrInvalid, "the same ID twice")
	m.ID = "u2"
	require.NoError(t, s.AppendMessage(m))
	m.ID = ""
	require.NoError(t, s.AppendMessage(m))
	require.NoError(t, s.AppendMessage(m), "messages without an ID are not compared")
	require.Equal(t, 4, s.MessageCount())
}

func TestMessageCloneIsDeep(t *testing.T) {
	m := richMessage()
	c := m.Clone()
	require.True(t, m.Equal(c))
	c.Usage.InputTokens = 99
	c.Parts[2].Content[1].Data[0] = 9
	c.Parts[2].Result[1] = 'X'
	c.Parts[1].Input[1] = 'X'
	require.Equal(t, int64(1), m.Usage.InputTokens)
	require.Equal(t, byte(1), m.Parts[2].Content[1].Data[0])
	require.Equal(t, `{"hits":1}`, string(m.Parts[2].Result))
	require.Equal(t, `{"q":"x"}`, string(m.Parts[1].Input))
	require.False(t, m.Equal(c))

	s := newTestSession(t)
	require.NoError(t, s.BeginTurn())
	require.NoError(t, s.AppendMessage(m))
	m.Parts[2].Content[0].Text = "changed after appending"
	got := s.Conversation()[0]
	require.Equal(t, "hit", got.Parts[2].Content[0].Text)
	require.True(t, got.Equal(richMessage()))
	require.Equal(t, Usage{}, s.Usage(), "a message's usage is a record; only AddUsage moves the budget")
}

// TestCloneMessagesIsDeep: CloneMessages copies as Clone does, each
// message's parts its own (an append to one never writes into the next
// message's parts, though they share one allocation), nil parts nil.
func TestCloneMessagesIsDeep(t *testing.T) {
	ms := []Message{richMessage(), {Role: RoleUser}, richMessage()}
	ms[2].ID = "m3"
	c := CloneMessages(ms)
	require.Len(t, c, len(ms))
	for i := range ms {
		require.True(t, ms[i].Equal(c[i]), "message %d", i)
		require.Equal(t, ms[i].Parts == nil, c[i].Parts == nil, "message %d", i)
	}
	c[0].Usage.InputTokens = 99
	c[0].Parts[2].Content[1].Data[0] = 9
	c[2].Parts[1].Input[1] = 'X'
	c[0].Parts[0].Text = "changed"
	require.Equal(t, int64(1), ms[0].Usage.InputTokens)
	require.Equal(t, byte(1), ms[0].Parts[2].Content[1].Data[0])
	require.Equal(t, `{"q":"x"}`, string(ms[2].Parts[1].Input))
	require.True(t, ms[0].Equal(richMessage()))
	c[1].Parts = append(c[1].Parts, Part{Type: PartText, Text: "more"})
	c[0].Parts = append(c[0].Parts, Part{Type: PartText, Text: "more"})
	require.Equal(t, ms[2].Parts[0], c[2].Parts[0], "an append to one message's parts leaves the next one's")
	require.Empty(t, CloneMessages(nil))
}

func TestMessageEqual(t *testing.T) {
	base := richMessage()
	same := []func(*Message){
		func(m *Message) { m.CreatedAt = m.CreatedAt.In(time.FixedZone("CET", 3600)) },
		func(m *Message) { m.Parts[1].Input = json.RawMessage(`{ "q" : "x" }`) },
		func(m *Message) { m.Parts[1].Input = json.RawMessage(`{"q":"\u0078"}`) },
		func(m *Message) { m.Parts[0].Content = []Part{} },
		func(m *Message) { m.Parts[2].Content[0].Data = []byte{} },
	}
	for i, mutate := range same {
		m := richMessage()
		mutate(&m)
		require.True(t, base.Equal(m), "variant %d says the same thing", i)
	}
	different := []func(*Message){
		func(m *Message) { m.ID = "m2" },
		func(m *Message) { m.Usage = nil },
		func(m *Message) { m.Usage.CacheWriteTokens = 5 },
		func(m *Message) { m.Compaction = &Compaction{} },
		func(m *Message) { m.Injected = true },
		func(m *Message) { m.Error = "e" },
		func(m *Message) { m.Parts[0].Signature = "other" },
		func(m *Message) { m.Parts[1].ProviderExecuted = false },
		func(m *Message) { m.Parts[1].Input = json.RawMessage(`{"q":"y"}`) },
		func(m *Message) { m.Parts[2].Content = m.Parts[2].Content[:2] },
		func(m *Message) { m.Parts = m.Parts[:2] },
		func(m *Message) { m.CreatedAt = m.CreatedAt.Add(1) },
	}
	for i, mutate := range different {
		m := richMessage()
		mutate(&m)
		require.False(t, base.Equal(m), "variant %d differs", i)
	}
}
