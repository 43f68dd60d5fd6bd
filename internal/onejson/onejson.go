package onejson

import (
	"encoding/json"
	"errors"
	"io"
)

// ErrTrailing is Decode's error for an input that holds more after its
// JSON value than white space.
var ErrTrailing = errors.New("data after the JSON value")

// Decode decodes dec's next value into v and then requires the input to
// end: anything but white space after the value is ErrTrailing. An error
// of the value itself is dec.Decode's (io.EOF for an empty input).
func Decode(dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailing
	}
	return nil
}
