package redact

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// What is scanned, in a snapshot: its title and last error, the pending
// approval's input and reason, and in each message its error and each
// part's text, tool input, tool output, structured result, URL, and data
// when it is UTF-8 text (a text file, JSON; an image's bytes are not).
// What is not: identifiers, names, media types, the provider's encrypted
// reasoning and signatures (opaque to everyone but the provider, and
// refused by it when changed), and content a part holds only as a
// reference (it was redacted when first written).

// Message returns m with its secrets replaced and how many it replaced:
// m itself (sharing its memory) when it holds none, else a copy that
// shares what did not change.
func (r *Redactor) Message(m session.Message) (session.Message, int) {
	if r == nil {
		return m, 0
	}
	var n int
	if e, k := r.String(m.Error); k > 0 {
		m.Error, n = e, n+k
	}
	if parts, k := r.parts(m.Parts); k > 0 {
		m.Parts, n = parts, n+k
	}
	return m, n
}

// parts returns ps redacted: ps itself when nothing changed, else a copy.
func (r *Redactor) parts(ps []session.Part) ([]session.Part, int) {
	var out []session.Part
	total := 0
	for i := range ps {
		p, n := r.part(ps[i])
		if n == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(ps)
		}
		out[i] = p
		total += n
	}
	if out == nil {
		return ps, 0
	}
	return out, total
}

func (r *Redactor) part(p session.Part) (session.Part, int) {
	var n, k int
	p.Text, k = r.String(p.Text)
	n += k
	p.Output, k = r.String(p.Output)
	n += k
	p.URL, k = r.String(p.URL)
	n += k
	p.Input, k = r.JSON(p.Input)
	n += k
	p.Result, k = r.JSON(p.Result)
	n += k
	if len(p.Data) > 0 && utf8.Valid(p.Data) {
		p.Data, k = r.Bytes(p.Data)
		n += k
	}
	p.Content, k = r.parts(p.Content)
	n += k
	return p, n
}

// JSON returns the JSON document b with the secrets in its strings
// replaced, still valid JSON: b itself when it holds none.
func (r *Redactor) JSON(b json.RawMessage) (json.RawMessage, int) {
	out, n := r.Bytes(b)
	if n == 0 || json.Valid(out) || !json.Valid(b) {
		return out, n
	}
	// A match that began or ended inside an escape sequence broke the
	// document: redact its decoded strings instead, and encode it again.
	var v any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return out, n
	}
	v, n = r.value(v)
	enc, err := json.Marshal(v)
	if err != nil {
		return out, n
	}
	return enc, n
}

func (r *Redactor) value(v any) (any, int) {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case []any:
		n := 0
		for i := range x {
			var k int
			x[i], k = r.value(x[i])
			n += k
		}
		return x, n
	case map[string]any:
		n := 0
		for key, e := range x {
			var k int
			x[key], k = r.value(e)
			n += k
		}
		return x, n
	}
	return v, 0
}

// Snapshot returns snap with its secrets replaced, and how many it
// replaced. Its messages are snap's own slice when none changed, else a
// new slice sharing the messages that did not.
func (r *Redactor) Snapshot(snap sessnap.Snapshot) (sessnap.Snapshot, int) {
	n := r.head(&snap)
	msgs, k := r.messages(snap.Messages, 0, nil)
	snap.Messages = msgs
	return snap, n + k
}

// head redacts the snapshot's fields outside its conversation.
func (r *Redactor) head(snap *sessnap.Snapshot) int {
	if r == nil {
		return 0
	}
	var n, k int
	snap.Title, k = r.title(snap.Title)
	n += k
	snap.LastError, k = r.String(snap.LastError)
	n += k
	if p := snap.Pending; p != nil {
		in, k1 := r.JSON(p.Input)
		reason, k2 := r.String(p.Reason)
		if k1+k2 > 0 {
			c := *p
			c.Input, c.Reason = in, reason
			snap.Pending = &c
			n += k1 + k2
		}
	}
	return n
}

// messages redacts ms[from:]; out, when not nil, holds the redacted
// ms[:from] already (and its capacity is the caller's to grow). It returns
// ms itself when out is nil and nothing changed.
func (r *Redactor) messages(ms sessnap.Messages, from int, out sessnap.Messages) (sessnap.Messages, int) {
	if r == nil {
		return ms, 0
	}
	n := 0
	for i := from; i < len(ms); i++ {
		m, k := r.Message(ms[i])
		if k > 0 && out == nil {
			// Room to grow, as the caller's slice has: the next
			// revisions' redacted messages continue this copy (Stream).
			out = append(make(sessnap.Messages, 0, max(cap(ms), 2*len(ms))), ms[:i]...)
		}
		if out != nil {
			out = append(out, m)
		}
		n += k
	}
	if out == nil {
		return ms, 0
	}
	return out, n
}

// title redacts a title, which may end in a secret cut short (a title
// derived from a prompt is clamped): a last word that begins with a
// keyword a rule's matches begin with is replaced too.
func (r *Redactor) title(t string) (string, int) {
	t, n := r.String(t)
	if at, last, rule := r.cutShort(t); rule != "" {
		return t[:at] + Placeholder(rule, last) + t[at+len(last):], n + 1
	}
	return t, n
}

// cutShort returns the last word of t when it begins with a keyword that
// begins a rule's matches, its offset, and the rule.
func (r *Redactor) cutShort(t string) (at int, last, rule string) {
	if r.Off() {
		return 0, "", ""
	}
	at = strings.LastIndexAny(t, " \t\n") + 1
	last = strings.TrimSuffix(t[at:], "…")
	if len(last) < 4 {
		return 0, "", ""
	}
	for _, ru := range r.set().rules {
		if ru.before != 0 || ru.generic {
			continue // a keyword that does not begin the match
		}
		for _, kw := range ru.keywords {
			if strings.HasPrefix(last, kw) {
				return at, last, ru.id
			}
		}
	}
	return 0, "", ""
}
