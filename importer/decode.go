package importer

import (
	"encoding/json"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// The converters decode every line of their sources, and the same bytes
// at several depths (a line, its message, its content blocks). The
// standard decoder scans all of its input to validate it before it
// decodes it, so reading a transcript with it cost several scans of every
// line; goccy/go-json validates as it decodes. Two of its ways differ
// from the standard decoder's, and are kept out: it takes invalid UTF-8
// in a string as it is (the standard decoder, and so the sessions,
// replace each bad byte with U+FFFD), so input that is not valid UTF-8
// goes to the standard decoder; and it accepts a few inputs that are not
// JSON (a number with a leading zero), so a line is validated by the
// standard rules first, once, and the values within it need not be.

// DecodeLine decodes one JSON line of a source into each of vs, as
// encoding/json's Unmarshal does: an error when data is not valid JSON
// or does not fit one of vs.
func DecodeLine(data []byte, vs ...any) error {
	std := !utf8.Valid(data)
	if !std && !json.Valid(data) {
		var v any
		return json.Unmarshal(data, &v) // the standard decoder's error
	}
	for _, v := range vs {
		var err error
		if std {
			err = json.Unmarshal(data, v)
		} else {
			err = gojson.Unmarshal(data, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Unmarshal decodes data, a value within a line DecodeLine decoded
// (valid JSON), into v as encoding/json's Unmarshal does.
func Unmarshal(data []byte, v any) error {
	if !utf8.Valid(data) {
		return json.Unmarshal(data, v)
	}
	return gojson.Unmarshal(data, v)
}

// Keys is the set of a JSON object's keys, for DecodeLine: what a
// converter needs of a line's fields to count those it does not know,
// without copying their values.
type Keys map[string]present

type present struct{}

// UnmarshalJSON ignores the value: only the key is kept.
func (*present) UnmarshalJSON([]byte) error { return nil }
