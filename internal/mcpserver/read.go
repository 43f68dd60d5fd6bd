package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/transcript"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// ReadSessionArgs are read_session's arguments.
type ReadSessionArgs struct {
	ID          string `json:"id" jsonschema:"the session's ID, or a unique prefix of it"`
	FromMessage int    `json:"from_message,omitempty" jsonschema:"the first message to show (from 0), to go on after a cut"`
	MaxBytes    int    `json:"max_bytes,omitempty" jsonschema:"the most bytes of Markdown to return (default 65536, at most 1048576)"`
}

// readSession renders the session's latest revision as `sessions show
// --format markdown` does (transcript.WriteMarkdown), from message
// from_message on, and as many whole messages as fit in max_bytes. Its
// result is the Markdown, then a note when anything was left out.
func (t *tools) readSession(ctx context.Context, _ *mcp.CallToolRequest, in ReadSessionArgs) (*mcp.CallToolResult, any, error) {
	most, err := readBound(in.MaxBytes)
	if err != nil {
		return nil, nil, err
	}
	id, err := t.resolve(ctx, in.ID)
	if err != nil {
		return nil, nil, err
	}
	rec, err := t.st.Load(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("load session %s: %w", id, err)
	}
	n := len(rec.Snapshot.Messages)
	if in.FromMessage < 0 || in.FromMessage > n || (in.FromMessage == n && n > 0) {
		return nil, nil, fmt.Errorf("%w: from_message %d: session %s has %d messages (0 to %d)", ErrBadArgument, in.FromMessage, id, n, max(n-1, 0))
	}
	p, err := page(rec.Snapshot, in.FromMessage, most)
	if err != nil {
		return nil, nil, fmt.Errorf("render session %s: %w", id, err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: p.text}}}
	if note := p.note(id, n, most); note != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: note})
	}
	return res, nil, nil
}

// rendered is one page of a session's Markdown: messages [from, to).
type rendered struct {
	text     string
	from, to int
	// cut: message from alone renders to more than the page holds, and
	// text is its start (of whole bytes bytes).
	cut   bool
	bytes int
}

// note says what the page left out, and how to read it; "" when it is
// the whole session.
func (p rendered) note(id session.SessionID, n, most int) string {
	switch {
	case p.cut:
		return fmt.Sprintf("[Cut: message %d of session %s alone renders to %d bytes, more than max_bytes %d; the text above is its first %d bytes. "+
			"read_message with index %d gives the message itself; from_message %d goes on with the session.]",
			p.from, id, p.bytes, most, len(p.text), p.from, p.to)
	case p.from == 0 && p.to == n:
		return ""
	case p.to == n:
		return fmt.Sprintf("[Messages %d to %d of session %s's %d shown: the end of the session.]", p.from, p.to-1, id, n)
	}
	return fmt.Sprintf("[Cut at max_bytes %d: messages %d to %d of session %s's %d shown. Call read_session with from_message %d for the rest.]",
		most, p.from, p.to-1, id, n, p.to)
}

// page renders snap from message from on, with as many whole messages
// as fit in most bytes, and at least one: a message that alone is over
// most is cut. The rendering of a message does not depend on the others,
// so more messages never render shorter: it doubles the count while
// they fit, then halves the gap, rendering about a page's worth each
// time however long the session is.
func page(snap sessnap.Snapshot, from, most int) (rendered, error) {
	n := len(snap.Messages)
	// renderRange(from, lo) fits (lo == from: nothing yet), and
	// renderRange(from, hi) does not (hi == n+1: not known to).
	lo, hi := from, n+1
	var fit string
	for step := 1; lo < n; step *= 2 {
		to := min(from+step, n)
		s, err := renderRange(snap, from, to)
		if err != nil {
			return rendered{}, err
		}
		if len(s) > most {
			hi = to
			break
		}
		lo, fit = to, s
	}
	if lo == n && n > from {
		return rendered{text: fit, from: from, to: n}, nil
	}
	if n == from { // no messages: the facts alone
		s, err := renderRange(snap, from, n)
		return rendered{text: s, from: from, to: n}, err
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		s, err := renderRange(snap, from, mid)
		if err != nil {
			return rendered{}, err
		}
		if len(s) <= most {
			lo, fit = mid, s
		} else {
			hi = mid
		}
	}
	if lo > from {
		return rendered{text: fit, from: from, to: lo}, nil
	}
	one, err := renderRange(snap, from, from+1)
	if err != nil {
		return rendered{}, err
	}
	return rendered{text: cutText(one, most), from: from, to: from + 1, cut: true, bytes: len(one)}, nil
}

// renderRange is the Markdown of snap with only messages [from, to):
// the session's facts are the same, and each message renders as it
// does in the whole.
func renderRange(snap sessnap.Snapshot, from, to int) (string, error) {
	snap.Messages = snap.Messages[from:to:to] // a new slice header; the shared messages are not touched
	s, err := snap.Restore()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := transcript.WriteMarkdown(&b, s, transcript.Options{}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// cutText is s cut to at most most bytes, at the last line break that
// leaves at least half of them, else at a character boundary.
func cutText(s string, most int) string {
	if len(s) <= most {
		return s
	}
	s = s[:most]
	if i := bytes.LastIndexByte([]byte(s), '\n'); i >= most/2 {
		return s[:i+1]
	}
	for range utf8.UTFMax - 1 { // a character cut in two: drop its start
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// readBound is a read's max_bytes: the default for 0, clamped to
// [minReadBytes, MaxReadBytes].
func readBound(n int) (int, error) {
	most, err := bound("max_bytes", n, DefaultReadBytes, MaxReadBytes)
	return max(most, minReadBytes), err
}

// ReadMessageArgs are read_message's arguments.
type ReadMessageArgs struct {
	ID       string `json:"id" jsonschema:"the session's ID, or a unique prefix of it"`
	Index    int    `json:"index" jsonschema:"the message's index in the conversation, from 0 (as search hits give it)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"the most bytes of the message's JSON to return (default 65536, at most 1048576)"`
}

// Message is read_message's answer.
type Message struct {
	Session string `json:"session"`
	Index   int    `json:"index"`
	// Messages is how many messages the session has.
	Messages  int    `json:"messages"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at,omitempty"`
	// Message is the message as `sessions show` prints it (role, parts,
	// created_at, …), when its JSON is at most max_bytes.
	Message any `json:"message,omitempty"`
	// Bytes is the size of the message's JSON.
	Bytes int `json:"bytes"`
	// Truncated says the message was over max_bytes: Message is left
	// out, and Text is the start of its text.
	Truncated bool   `json:"truncated,omitempty"`
	Text      string `json:"text,omitempty"`
}

func (t *tools) readMessage(ctx context.Context, _ *mcp.CallToolRequest, in ReadMessageArgs) (*mcp.CallToolResult, Message, error) {
	most, err := readBound(in.MaxBytes)
	if err != nil {
		return nil, Message{}, err
	}
	id, err := t.resolve(ctx, in.ID)
	if err != nil {
		return nil, Message{}, err
	}
	rec, err := t.st.Load(ctx, id)
	if err != nil {
		return nil, Message{}, fmt.Errorf("load session %s: %w", id, err)
	}
	msgs := rec.Snapshot.Messages
	if in.Index < 0 || in.Index >= len(msgs) {
		return nil, Message{}, fmt.Errorf("%w: index %d: session %s has %d messages (0 to %d)", ErrBadArgument, in.Index, id, len(msgs), len(msgs)-1)
	}
	m := msgs[in.Index]
	b, err := sessnap.AppendMessage(nil, m, nil)
	if err != nil {
		return nil, Message{}, fmt.Errorf("encode message %d of session %s: %w", in.Index, id, err)
	}
	out := Message{Session: string(id), Index: in.Index, Messages: len(msgs), Role: string(m.Role), CreatedAt: stamp(m.CreatedAt), Bytes: len(b)}
	if len(b) <= most {
		out.Message = json.RawMessage(b)
	} else {
		out.Truncated = true
		out.Text = cutText(importer.Text(m.Parts), most)
	}
	return nil, out, nil
}
