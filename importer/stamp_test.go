package importer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
)

// TestStamp: a written line's time is UTC at a fixed width, and reads
// back to the same instant, nanoseconds included.
func TestStamp(t *testing.T) {
	east := time.FixedZone("east", 5*3600)
	for _, at := range []time.Time{
		time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 3, 15, 4, 5, 120, east),
		time.Date(2026, 12, 3, 15, 4, 5, 999999999, east),
	} {
		s := importer.Stamp(at)
		require.Len(t, s, len("2006-01-02T15:04:05.000000000Z"), s)
		back, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		require.True(t, back.Equal(at), "%s reads back as %s", at, back)
		require.Equal(t, time.UTC, back.Location())
	}
}
