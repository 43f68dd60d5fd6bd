package onejson_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/onejson"
)

// TestDecode: one value with white space around it decodes; a second
// value, a stray byte or a torn second value after it is ErrTrailing;
// an empty input is io.EOF and a bad value its syntax error.
func TestDecode(t *testing.T) {
	for _, in := range []string{`{"a":1}`, " {\"a\":1} \n\t", `[1]`, `2`} {
		var v any
		require.NoError(t, onejson.Decode(json.NewDecoder(strings.NewReader(in)), &v), "%q", in)
		require.NotNil(t, v, "%q", in)
	}
	for _, in := range []string{`{"a":1} {}`, `{"a":1}x`, `{"a":1} {"b"`, `1 2`, `{}]`} {
		var v any
		require.ErrorIs(t, onejson.Decode(json.NewDecoder(strings.NewReader(in)), &v), onejson.ErrTrailing, "%q", in)
	}
	var v any
	require.ErrorIs(t, onejson.Decode(json.NewDecoder(strings.NewReader("  ")), &v), io.EOF)
	var se *json.SyntaxError
	require.ErrorAs(t, onejson.Decode(json.NewDecoder(strings.NewReader(`{"a":}`)), &v), &se)
}
