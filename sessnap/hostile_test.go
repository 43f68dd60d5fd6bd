package sessnap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/sessnap"
)

// TestDeepNesting: encoding/json stops at nesting depth 10000, so a hostile
// snapshot nested deeper — anywhere: in the messages, inside a tool
// call's raw input, in the placement labels — is refused with
// ErrMalformed, quickly and without overflowing the stack; legal deep
// nesting below the limit (a tool input 9000 levels deep) decodes and
// re-encodes unchanged.
func TestDeepNesting(t *testing.T) {
	full, err := os.ReadFile(filepath.Join(fixtureDir, "full.json"))
	require.NoError(t, err)
	nested := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	// withInput puts raw as the input of the fixture's first tool call.
	withInput := func(raw string) []byte {
		i := strings.Index(string(full), `"input":`)
		require.Positive(t, i, "full.json has a tool call input")
		rest := string(full)[i+len(`"input":`):]
		end := strings.Index(rest, `}`) + 1 // the fixture's inputs are flat objects
		return []byte(string(full)[:i] + `"input":` + raw + rest[end:])
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"messages", []byte(`{"id":"x","messages":` + nested(100_000) + `}`)},
		{"tool input", withInput(nested(10_001))},
		{"tool input far deeper", withInput(nested(1_000_000))},
		{"placement labels", []byte(`{"id":"x","placement":{"labels":` + strings.Repeat(`{"a":`, 50_000) + `1` + strings.Repeat(`}`, 50_000) + `}}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := sessnap.Unmarshal(tt.data)
			require.ErrorIs(t, err, sessnap.ErrMalformed)
			require.Contains(t, err.Error(), "exceeded max depth")
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}

	legal := withInput(nested(9_000))
	snap, err := sessnap.Unmarshal(legal)
	require.NoError(t, err)
	b1, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	require.Contains(t, string(b1), nested(9_000))
	again, err := sessnap.Unmarshal(b1)
	require.NoError(t, err)
	b2, err := sessnap.Marshal(again)
	require.NoError(t, err)
	require.Equal(t, string(b1), string(b2))
}
