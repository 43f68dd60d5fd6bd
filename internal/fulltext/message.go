package fulltext

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"strings"

	"github.com/sessionstore/sessionstore/session"
)

// Fields of a hit: where in a session the words were found.
const (
	FieldTitle = "title" // the session's title
	FieldText  = "text"  // a message's text: prompts, replies, reasoning, errors
	FieldTool  = "tool"  // a message's tool calls (name and input) and tool results
)

// Doc is what one message offers to a search: its role, its text and its
// tool calls and results, each part on a line of its own.
type Doc struct {
	Role session.Role
	Text string
	Tool string
}

// Field returns the doc's text of field f (FieldText or FieldTool).
func (d *Doc) Field(f string) string {
	if f == FieldTool {
		return d.Tool
	}
	return d.Text
}

// MessageDoc returns what m offers to a search. ok is false when some of
// its searchable content is not loaded (a part holding a
// session.ContentRef instead of its text): the caller loads the message
// with its content first.
func MessageDoc(m *session.Message) (d Doc, ok bool) {
	var text, tool strings.Builder
	line := func(b *strings.Builder, s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	ok = true
	part := func(p *session.Part) {
		if p.Ref != nil && p.Ref.Field != session.ContentData && p.Ref.Field != session.ContentEncrypted {
			ok = false
		}
		switch p.Type {
		case session.PartText, session.PartReasoning:
			line(&text, p.Text)
		case session.PartToolCall:
			line(&tool, p.Name)
			line(&tool, string(p.Input))
		case session.PartToolResult:
			line(&tool, p.Output)
			for i := range p.Content {
				if p.Content[i].Type == session.PartText {
					if p.Content[i].Ref != nil {
						ok = false
					}
					line(&tool, p.Content[i].Text)
				}
			}
			line(&tool, string(p.Result))
		}
	}
	for i := range m.Parts {
		part(&m.Parts[i])
	}
	line(&text, m.Error)
	return Doc{Role: m.Role, Text: text.String(), Tool: tool.String()}, ok
}

// Digest proves which messages an index holds: a chain over the docs of
// a conversation's first messages, each link the SHA-256 of the previous
// link and the doc. Two conversations whose first n messages offer the
// same docs have the same digest after n; an index compares it to tell a
// conversation that went on from one that was replaced.
type Digest [sha256.Size]byte

// Add returns the digest after one more message's doc.
func (d Digest) Add(doc *Doc) Digest {
	h := sha256.New()
	h.Write(d[:])
	var n [8]byte
	for _, s := range [...]string{string(doc.Role), doc.Text, doc.Tool} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		_, _ = io.WriteString(h, s)
	}
	var out Digest
	h.Sum(out[:0])
	return out
}
