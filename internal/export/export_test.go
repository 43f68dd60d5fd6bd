package export_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/export"
	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

// TestAppendLine: the keys in their documented order, the time in UTC
// with nanoseconds, the snapshot byte for byte, one newline; a line reads
// back as JSON.
func TestAppendLine(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 1, 5, time.FixedZone("CET", 3600))
	snap := []byte(`{"id":"a","x":{"unknown":true}}`)
	got := export.AppendLine([]byte("prefix "), 3, 2, at, 1, snap)
	want := `prefix {"revision":3,"generation":2,"time":"2026-11-29T12:00:01.000000005Z","schema":1,"snapshot":{"id":"a","x":{"unknown":true}}}` + "\n"
	require.Equal(t, want, string(got))

	var line struct {
		Revision uint64          `json:"revision"`
		Snapshot json.RawMessage `json:"snapshot"`
	}
	require.NoError(t, json.Unmarshal(got[len("prefix "):], &line))
	require.Equal(t, uint64(3), line.Revision)
	require.JSONEq(t, string(snap), string(line.Snapshot))
}

// TestIndent: indented with two spaces and a newline; what is not JSON
// is an error.
func TestIndent(t *testing.T) {
	got, err := export.Indent([]byte(`{"id":"a","n":[1,2]}`))
	require.NoError(t, err)
	require.Equal(t, "{\n  \"id\": \"a\",\n  \"n\": [\n    1,\n    2\n  ]\n}\n", string(got))

	_, err = export.Indent([]byte(`{"id":`))
	require.Error(t, err)
}
