package fslease_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
)

// TestDeepNestingInRecord: a lease.json nested beyond encoding/json's
// depth limit (10000), within the 64 KiB the reader ever holds, is an
// unreadable previous record — quickly, without overflowing the stack —
// and a generation legible before the nesting still counts.
func TestDeepNestingInRecord(t *testing.T) {
	const depth = 30_000 // 60 KB of brackets: under MaxRecordSize
	tests := []struct {
		name    string
		file    string
		wantGen uint64
	}{
		{"only brackets", strings.Repeat("[", depth) + strings.Repeat("]", depth), 1},
		{"nesting after the generation", `{"version":1,"generation":7,"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`, 8},
		{"unterminated", `{"version":1,"generation":7,"x":` + strings.Repeat(`{"a":`, depth/3), 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Less(t, len(tt.file), fslease.MaxRecordSize)
			dir := t.TempDir()
			writeLeaseJSON(t, dir, []byte(tt.file))
			start := time.Now()
			st, err := fslease.Inspect(t.Context(), dir)
			require.NoError(t, err)
			require.ErrorIs(t, st.RecordErr, fslease.ErrCorruptRecord)
			l, err := fslease.Acquire(t.Context(), dir, fslease.Options{})
			require.NoError(t, err)
			defer l.Release(t.Context())
			require.Equal(t, fslease.PrevUnreadable, l.PreviousState())
			require.Equal(t, tt.wantGen, l.Generation())
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}
