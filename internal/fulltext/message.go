package fulltext

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"unsafe"

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
	var text, tool lines
	ok = true
	part := func(p *session.Part) {
		if p.Ref != nil && p.Ref.Field != session.ContentData && p.Ref.Field != session.ContentEncrypted {
			ok = false
		}
		switch p.Type {
		case session.PartText, session.PartReasoning:
			text.add(p.Text)
		case session.PartToolCall:
			tool.add(p.Name)
			tool.add(string(p.Input))
		case session.PartToolResult:
			tool.add(p.Output)
			for i := range p.Content {
				if p.Content[i].Type == session.PartText {
					if p.Content[i].Ref != nil {
						ok = false
					}
					tool.add(p.Content[i].Text)
				}
			}
			tool.add(string(p.Result))
		}
	}
	for i := range m.Parts {
		part(&m.Parts[i])
	}
	text.add(m.Error)
	return Doc{Role: m.Role, Text: text.String(), Tool: tool.String()}, ok
}

// lines joins the non-empty strings added, each on a line of its own.
// One string alone is the string itself, not a copy: most messages have
// one part of each kind, and a search under load makes the docs of
// every message appended since the index's rows, tool results of tens
// of KiB among them.
type lines struct {
	n   int
	one string // the first
	b   strings.Builder
}

func (l *lines) add(s string) {
	if s == "" {
		return
	}
	switch l.n {
	case 0:
		l.one = s
	case 1:
		l.b.Grow(len(l.one) + 1 + len(s))
		l.b.WriteString(l.one)
		fallthrough
	default:
		l.b.WriteByte('\n')
		l.b.WriteString(s)
	}
	l.n++
}

func (l *lines) String() string {
	if l.n < 2 {
		return l.one
	}
	return l.b.String()
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
		h.Write(stringBytes(s))
	}
	var out Digest
	h.Sum(out[:0])
	return out
}

// stringBytes is s as bytes without a copy, for a hash to read (a
// Writer never changes what it is given): a doc's text is hashed into
// the digest of every message an index write adds, and a copy of each
// was most of the hashing's cost.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s)) //nolint:gosec // G103: read only (hash.Hash.Write), not kept
}
