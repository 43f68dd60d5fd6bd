package record

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
)

func TestCap(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		wantCap int
	}{
		{name: "zero is the default", n: 0, wantCap: sessionstore.DefaultMaxRecordBytes},
		{name: "negative is the default", n: -1, wantCap: sessionstore.DefaultMaxRecordBytes},
		{name: "smaller", n: 1 << 10, wantCap: 1 << 10},
		{name: "larger", n: 64 << 20, wantCap: 64 << 20},
	}
	for _, tt := range tests {
		require.Equal(t, tt.wantCap, Cap(tt.n), tt.name)
	}
}

func TestSessionCap(t *testing.T) {
	const own = 1 << 20
	tests := []struct {
		name     string
		recorded int64
		wantCap  int
	}{
		{name: "nothing recorded", recorded: 0, wantCap: own},
		{name: "recorded smaller", recorded: own / 2, wantCap: own},
		{name: "recorded the same", recorded: own, wantCap: own},
		{name: "recorded larger", recorded: 4 * own, wantCap: 4 * own},
		{name: "recorded at the ceiling", recorded: sessionstore.MaxReadRecordBytes, wantCap: sessionstore.MaxReadRecordBytes},
		{name: "recorded above the ceiling", recorded: 1 << 40, wantCap: sessionstore.MaxReadRecordBytes},
		{name: "recorded negative", recorded: -5, wantCap: own},
	}
	for _, tt := range tests {
		require.Equal(t, tt.wantCap, SessionCap(own, tt.recorded), tt.name)
	}
	require.Equal(t, 2*sessionstore.MaxReadRecordBytes, SessionCap(2*sessionstore.MaxReadRecordBytes, 1<<40),
		"a store's own cap is its own, whatever the ceiling on recorded ones")
}
