package sessnap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore/internal/onejson"
	"github.com/sessionstore/sessionstore/session"
)

// UnmarshalMessage decodes one message in the form a snapshot's
// "messages" array holds it (the form `sessions show` prints), strictly,
// for input from outside the store: a key this codec does not know, a
// content reference ("blob": content a session holds, which a new
// message cannot name), invalid UTF-8, or anything after the value is
// ErrMalformed, and a message session.Message.Validate refuses is
// ErrInvalid. Unmarshal, which reads what writers stored, ignores unknown
// keys instead (they come from newer writers).
func UnmarshalMessage(data []byte) (session.Message, error) {
	if !utf8.Valid(data) {
		return session.Message{}, fmt.Errorf("%w: message is not valid UTF-8", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d messageDTO
	if err := onejson.Decode(dec, &d); err != nil {
		return session.Message{}, fmt.Errorf("%w: message: %w", ErrMalformed, err)
	}
	if hasBlob(d.Parts) {
		return session.Message{}, fmt.Errorf("%w: message: a part holds a content reference (blob); send the content itself", ErrMalformed)
	}
	m := d.message()
	if err := m.Validate(); err != nil {
		return session.Message{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return m, nil
}

func hasBlob(parts []partDTO) bool {
	for _, p := range parts {
		if p.Blob != nil || hasBlob(p.Content) {
			return true
		}
	}
	return false
}
