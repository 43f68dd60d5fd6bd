package fslease_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
)

// fixture reads testdata/<name>/lease.json.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name, fslease.RecordFile))
	require.NoError(t, err)
	return data
}

// TestAcquireRecoversBadRecords: Acquire over empty, truncated, garbage,
// oversized and future-version lease files never panics; it either
// recovers (PrevUnreadable, with the reason in PreviousErr) or refuses
// with a clear error, and the generation it writes is above every
// generation legible in the file and above MinGeneration.
func TestAcquireRecoversBadRecords(t *testing.T) {
	const maxGen = fslease.MaxGeneration
	huge := []byte(`{"version":1,"generation":9,"owner":{"label":"` + strings.Repeat("a", 1<<20) + `"}}`)
	tests := []struct {
		name      string
		file      []byte // nil: no lease.json
		min       uint64
		wantErr   error
		wantPrev  fslease.PrevState
		wantCause error // in PreviousErr
		wantGen   uint64
	}{
		{name: "no file", wantPrev: fslease.PrevNone, wantGen: 1},
		{name: "valid stale", file: fixture(t, "valid-v1"), wantPrev: fslease.PrevStale, wantGen: 43},
		{name: "valid released", file: fixture(t, "released-v1"), wantPrev: fslease.PrevReleased, wantGen: 8},
		{name: "min above file generation", file: fixture(t, "valid-v1"), min: 100, wantPrev: fslease.PrevStale, wantGen: 101},
		{name: "min below file generation", file: fixture(t, "valid-v1"), min: 5, wantPrev: fslease.PrevStale, wantGen: 43},
		{name: "empty", file: fixture(t, "empty"), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 1},
		{name: "empty with min", file: fixture(t, "empty"), min: 10, wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 11},
		{name: "whitespace", file: []byte(" \n\t "), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 1},
		{name: "truncated keeps legible generation", file: fixture(t, "truncated"), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 42},
		{name: "trailing garbage keeps generation", file: append(fixture(t, "valid-v1"), "}}garbage"...), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 43},
		{name: "garbage", file: fixture(t, "garbage"), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 1},
		{name: "NUL-filled with min", file: make([]byte, 4096), min: 5, wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 6},
		{name: "future version", file: fixture(t, "future-v2"), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrFutureVersion, wantGen: 71},
		{name: "future version above min", file: fixture(t, "future-v2"), min: 80, wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrFutureVersion, wantGen: 81},
		{name: "future version same shape", file: bytes.Replace(fixture(t, "valid-v1"), []byte(`"version": 1`), []byte(`"version": 3`), 1), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrFutureVersion, wantGen: 43},
		{name: "huge record keeps generation from its head", file: huge, wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 10},
		{name: "huge garbage", file: bytes.Repeat([]byte("\x00garbage"), 2<<20), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 1},
		{name: "generation zero", file: []byte(`{"version":1,"generation":0}`), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 1},
		{name: "negative generation", file: []byte(`{"version":1,"generation":-5}`), min: 2, wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 3},
		{name: "fractional generation", file: []byte(`{"version":1,"generation":5.5}`), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 1},
		{name: "missing version", file: []byte(`{"generation":5}`), wantPrev: fslease.PrevUnreadable, wantCause: fslease.ErrCorruptRecord, wantGen: 6},
		{name: "up to the maximum", file: recordJSON(t, maxGen-1, true), wantPrev: fslease.PrevReleased, wantGen: maxGen},
		{name: "file at the maximum", file: recordJSON(t, maxGen, true), wantErr: fslease.ErrOverflow},
		{name: "file above 2^53-1", file: fixture(t, "overflow"), wantErr: fslease.ErrOverflow},
		{name: "file above uint64", file: []byte(`{"version":1,"generation":123456789012345678901234567890}`), wantErr: fslease.ErrOverflow},
		{name: "min at the maximum", min: maxGen, wantErr: fslease.ErrOverflow},
		{name: "min at uint64 max", file: fixture(t, "valid-v1"), min: ^uint64(0), wantErr: fslease.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			if tt.file != nil {
				writeLeaseJSON(t, dir, tt.file)
			}
			l, err := fslease.Acquire(ctx, dir, fslease.Options{MinGeneration: tt.min})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.Nil(t, l)
				if tt.file != nil {
					got, err := os.ReadFile(filepath.Join(dir, fslease.RecordFile))
					require.NoError(t, err)
					require.Equal(t, tt.file, got, "a refused Acquire must leave lease.json alone")
				}
				st, err := fslease.Inspect(ctx, dir)
				require.NoError(t, err)
				require.NotEqual(t, fslease.Held, st.State, "a refused Acquire must not keep the lock")
				return
			}
			require.NoError(t, err)
			defer l.Release(ctx)
			require.Equal(t, tt.wantPrev, l.PreviousState())
			if tt.wantCause != nil {
				require.ErrorIs(t, l.PreviousErr(), tt.wantCause)
				_, ok := l.Previous()
				require.False(t, ok)
			} else {
				require.NoError(t, l.PreviousErr())
			}
			require.Equal(t, tt.wantGen, l.Generation())
			require.Greater(t, l.Generation(), tt.min)
			require.Equal(t, l.Record(), readLeaseJSON(t, dir), "lease.json is whole again")
			require.NoError(t, l.Check())
		})
	}
}
