package sessnap

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/sessionstore/sessionstore/session"
)

// Messages is a snapshot's conversation. Of shares it with the session
// (Session.Conversation): a message never changes once appended, so
// taking a snapshot copies nothing, and a writer that appended the
// previous snapshot recognises the messages it already stored by their
// memory, at no cost per message. It is read-only: Clone a message to
// change it.
//
// It encodes as the JSON array "messages" (an empty one for none), each
// message as AppendMessage writes it.
type Messages []session.Message

// MarshalJSON encodes the conversation.
func (ms Messages) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = AppendMessage(b, m, nil); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON decodes the conversation (null is an empty one).
func (ms *Messages) UnmarshalJSON(b []byte) error {
	var dtos []messageDTO
	if err := json.Unmarshal(b, &dtos); err != nil {
		return err
	}
	out := make(Messages, len(dtos))
	for i, d := range dtos {
		out[i] = d.message()
	}
	*ms = out
	return nil
}

// Externalizer keeps large part content out of line while a message is
// encoded: Externalize is called with each content field of each part —
// field is session.ContentText, ContentOutput, ContentData or
// ContentEncrypted, content its bytes — and returns the reference to write
// in its place, or ok false to write the content inline.
type Externalizer interface {
	Externalize(field string, content []byte) (ref session.ContentRef, ok bool, err error)
}

// AppendMessage appends m's JSON, exactly as Marshal writes it inside the
// snapshot's "messages" array, to b. With ext, part content it externalizes
// is written as a reference ("blob") instead. It refuses, with
// ErrUnencodable, what Marshal refuses (checked for m alone).
func AppendMessage(b []byte, m session.Message, ext Externalizer) ([]byte, error) {
	d := dtoOf(m)
	if err := checkEncodable(reflect.ValueOf(d), "$.message", false); err != nil {
		return nil, err
	}
	if ext != nil {
		if err := externalize(d.Parts, ext); err != nil {
			return nil, err
		}
	}
	j, err := encode(reflect.ValueOf(d), "$.message")
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// externalize replaces, in parts (a DTO copy), the content ext keeps out
// of line by its reference.
func externalize(parts []partDTO, ext Externalizer) error {
	for i := range parts {
		p := &parts[i]
		if p.Blob != nil {
			continue // already a reference (a part loaded without content)
		}
		for _, f := range [...]struct {
			name string
			text *string
		}{{session.ContentText, &p.Text}, {session.ContentOutput, &p.Output}, {session.ContentEncrypted, &p.Encrypted}} {
			if *f.text == "" {
				continue
			}
			ref, ok, err := ext.Externalize(f.name, []byte(*f.text))
			if err != nil {
				return err
			}
			if ok {
				*f.text = ""
				p.Blob = &blobDTO{Of: ref.Field, SHA256: ref.SHA256, Size: ref.Size}
				break
			}
		}
		if p.Blob == nil && len(p.Data) > 0 {
			ref, ok, err := ext.Externalize(session.ContentData, p.Data)
			if err != nil {
				return err
			}
			if ok {
				p.Data = nil
				p.Blob = &blobDTO{Of: ref.Field, SHA256: ref.SHA256, Size: ref.Size}
			}
		}
		if len(p.Content) > 0 {
			// The nested parts are the DTO's own copy (partsOf): safe to change.
			if err := externalize(p.Content, ext); err != nil {
				return err
			}
		}
	}
	return nil
}

// Resolve fills in, in ms, the content of every part that holds a
// reference (a session.ContentRef) with what fetch returns for it, and
// clears the reference; fetch must return the content whose SHA-256 the
// reference names. It changes ms in place: call it on a snapshot of your
// own (one just decoded), never on one that shares a session's messages.
func (ms Messages) Resolve(fetch func(ref session.ContentRef) ([]byte, error)) error {
	return ms.ResolveWith(fetch, func(b []byte) string { return string(b) })
}

// ResolveWith is Resolve with text making the strings of a part's text,
// output and encrypted content from what fetch returned (Resolve copies
// them; a caller whose fetched bytes are never written again may share
// them). Data is always copied: the caller may change its bytes.
func (ms Messages) ResolveWith(fetch func(ref session.ContentRef) ([]byte, error), text func([]byte) string) error {
	for i := range ms {
		path := func() string { return "$.messages[" + strconv.Itoa(i) + "]" }
		if err := resolveParts(ms[i].Parts, fetch, text, path); err != nil {
			return err
		}
	}
	return nil
}

// resolveParts resolves parts; path names them in an error (built only
// for one).
func resolveParts(parts []session.Part, fetch func(ref session.ContentRef) ([]byte, error), text func([]byte) string, path func() string) error {
	for j := range parts {
		p := &parts[j]
		if r := p.Ref; r != nil {
			b, err := fetch(*r)
			if err != nil {
				return fmt.Errorf("%s.parts[%d]: %w", path(), j, err)
			}
			switch r.Field {
			case session.ContentText:
				p.Text = text(b)
			case session.ContentOutput:
				p.Output = text(b)
			case session.ContentEncrypted:
				p.Encrypted = text(b)
			case session.ContentData:
				p.Data = slices.Clone(b) // the caller's own bytes: fetch may share b
			default:
				return fmt.Errorf("%w: %s.parts[%d]: content reference to field %q", ErrMalformed, path(), j, r.Field)
			}
			p.Ref = nil
		}
		if p.Content == nil {
			continue
		}
		inner := func() string { return fmt.Sprintf("%s.parts[%d].content", path(), j) }
		if err := resolveParts(p.Content, fetch, text, inner); err != nil {
			return err
		}
	}
	return nil
}

// Refs calls fn with every content reference in ms, in order.
func (ms Messages) Refs(fn func(ref session.ContentRef)) {
	var walk func(parts []session.Part)
	walk = func(parts []session.Part) {
		for _, p := range parts {
			if p.Ref != nil {
				fn(*p.Ref)
			}
			walk(p.Content)
		}
	}
	for _, m := range ms {
		walk(m.Parts)
	}
}
