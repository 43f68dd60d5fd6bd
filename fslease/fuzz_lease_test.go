package fslease

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzLeaseFile: whatever lease.json holds (damaged, hostile, a restored
// copy from another machine), Inspect never panics or modifies anything,
// and Acquire either refuses with ErrOverflow — leaving the file alone
// and no lock held — or takes the lease with a generation above both the
// caller's minimum and every generation legible in the file, and leaves a
// lease.json that parses back to its record. Release then leaves a record
// that Inspect reads as free.
func FuzzLeaseFile(f *testing.F) {
	for _, s := range seedRecords(f) {
		for _, minGen := range []uint64{0, 41, MaxGeneration - 1, MaxGeneration} {
			f.Add(s, minGen)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, minGen uint64) {
		ctx := context.Background()
		dir := t.TempDir()
		recordPath := filepath.Join(dir, RecordFile)
		require.NoError(t, os.WriteFile(recordPath, data, 0o600))

		st, err := Inspect(ctx, dir)
		require.NoError(t, err)
		require.NotEqual(t, Held, st.State)
		if st.Record == nil {
			require.True(t, len(data) == 0 || st.RecordErr != nil, "an existing unreadable record says why")
		}
		unchanged := func(why string) {
			t.Helper()
			got, err := os.ReadFile(recordPath)
			require.NoError(t, err)
			require.Equal(t, string(data), string(got), why)
		}
		unchanged("Inspect never writes")

		// The floor: every generation legible in the file.
		var floor uint64
		if rec, err := parseRecord(data); err == nil {
			floor = rec.Generation
		} else if s := salvage(data[:min(len(data), MaxRecordSize)]); s.hasGeneration {
			floor = s.generation
		}

		l, err := Acquire(ctx, dir, Options{MinGeneration: minGen})
		if err != nil {
			require.ErrorIs(t, err, ErrOverflow)
			require.True(t, max(floor, minGen) >= MaxGeneration, "refused without overflow: floor %d, min %d", floor, minGen)
			unchanged("a refused Acquire leaves lease.json alone")
			st, err := Inspect(ctx, dir)
			require.NoError(t, err)
			require.NotEqual(t, Held, st.State, "a refused Acquire keeps no lock")
			return
		}
		require.Greater(t, l.Generation(), minGen)
		require.Greater(t, l.Generation(), floor)
		require.LessOrEqual(t, l.Generation(), uint64(MaxGeneration))
		b, err := os.ReadFile(recordPath)
		require.NoError(t, err)
		rec, err := parseRecord(b)
		require.NoError(t, err)
		require.Equal(t, l.Record(), rec, "lease.json is whole again")
		require.NoError(t, l.Check())
		require.NoError(t, l.Release(ctx))
		st, err = Inspect(ctx, dir)
		require.NoError(t, err)
		require.Equal(t, Free, st.State)
		if st.RecordErr != nil && !errors.Is(st.RecordErr, ErrCorruptRecord) {
			t.Fatalf("unexpected record error after release: %v", st.RecordErr)
		}
		require.NotNil(t, st.Record)
		require.True(t, st.Record.Released)
	})
}
