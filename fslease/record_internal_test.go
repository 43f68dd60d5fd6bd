package fslease

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// seedRecords are inputs for the parser tests and seeds for the fuzzer.
func seedRecords(tb testing.TB) [][]byte {
	tb.Helper()
	seeds := [][]byte{
		nil,
		[]byte("{}"),
		[]byte(`{"version":1,"generation":1,"owner":{"nonce":"aa"}}`),
		[]byte(`{"version":1,"generation":5,"owner":{"pid_start":"2026-01-01T01:00:00+01:00"},"acquired_at":"9999-12-31T23:59:59-01:00"}`),
		[]byte(`{"version":1,"generation":18446744073709551616}`),
		[]byte(`{"version":1,"GENERATION":3,"generation":4}`),
		[]byte(`{"version":2,"generation":[1,2]}`),
		[]byte(`[{"version":1}]`),
		[]byte(`{"version":1,"generation":7,"owner":{"label":"\ud800\u0000<>&"}}`),
	}
	dirs, err := os.ReadDir("testdata")
	require.NoError(tb, err)
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join("testdata", d.Name(), RecordFile))
		require.NoError(tb, err)
		seeds = append(seeds, data)
	}
	return seeds
}

// FuzzParseRecord: the lease-file parser never panics, and whatever it
// accepts re-encodes and parses back to the same Record. The salvage scan
// used on rejected files never panics either.
func FuzzParseRecord(f *testing.F) {
	for _, s := range seedRecords(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = salvage(data)
		rec, err := parseRecord(data)
		if err != nil {
			return
		}
		enc, err := encodeRecord(rec)
		require.NoError(t, err)
		again, err := parseRecord(enc)
		require.NoError(t, err, "%s", enc)
		require.Equal(t, rec, again)
	})
}

func TestParseRecord(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
		wantGen uint64
	}{
		{name: "minimal", in: `{"version":1,"generation":3}`, wantGen: 3},
		{name: "unknown field skipped", in: `{"version":1,"generation":3,"later":{"x":1}}`, wantGen: 3},
		{name: "empty", in: ``, wantErr: ErrCorruptRecord},
		{name: "not an object", in: `[1]`, wantErr: ErrCorruptRecord},
		{name: "trailing data", in: `{"version":1,"generation":3} {}`, wantErr: ErrCorruptRecord},
		{name: "no version", in: `{"generation":3}`, wantErr: ErrCorruptRecord},
		{name: "generation zero", in: `{"version":1,"generation":0}`, wantErr: ErrCorruptRecord},
		{name: "generation above 2^53-1", in: `{"version":1,"generation":9007199254740992}`, wantErr: ErrCorruptRecord},
		{name: "generation as string", in: `{"version":1,"generation":"3"}`, wantErr: ErrCorruptRecord},
		{name: "future version", in: `{"version":2,"generation":3}`, wantErr: ErrFutureVersion},
		{name: "future version other shape", in: `{"version":2,"generation":3,"owner":7}`, wantErr: ErrFutureVersion},
		{name: "bad time", in: `{"version":1,"generation":3,"acquired_at":"yesterday"}`, wantErr: ErrCorruptRecord},
		{name: "time past year 9999 in UTC", in: `{"version":1,"generation":3,"acquired_at":"9999-12-31T23:59:59-01:00"}`, wantErr: ErrCorruptRecord},
		{name: "too large", in: `{"version":1,"generation":3,"x":"` + strings.Repeat("a", MaxRecordSize) + `"}`, wantErr: ErrCorruptRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := parseRecord([]byte(tt.in))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantGen, rec.Generation)
		})
	}
}

// TestParseRecordNormalisesTimes: times come back in UTC, so a record read
// from disk equals the one the holder keeps in memory.
func TestParseRecordNormalisesTimes(t *testing.T) {
	rec, err := parseRecord([]byte(`{"version":1,"generation":1,"acquired_at":"2026-03-01T10:15:00+01:00","owner":{"pid_start":"0001-01-01T01:00:00+01:00"}}`))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 1, 9, 15, 0, 0, time.UTC), rec.AcquiredAt)
	require.Equal(t, time.Time{}, rec.Owner.PIDStart)
}

func TestSalvage(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantGen uint64
		wantOK  bool
		wantVer int64
	}{
		{name: "truncated after generation", in: `{"version":1,"generation":41,"owner":{"ho`, wantGen: 41, wantOK: true, wantVer: 1},
		// The digits may have been cut ("41" to "4"), but a prefix of the
		// digits is never more than the number, so it is a safe floor.
		{name: "truncated inside generation", in: `{"version":1,"generation":4`, wantGen: 4, wantOK: true, wantVer: 1},
		{name: "highest of duplicates", in: `{"generation":4,"Generation":9,"generation":2`, wantGen: 9, wantOK: true},
		{name: "saturates", in: `{"generation":99999999999999999999999}`, wantGen: ^uint64(0), wantOK: true},
		{name: "negative ignored", in: `{"generation":-1}`},
		{name: "nested ignored", in: `{"owner":{"generation":5}}`},
		{name: "garbage", in: "\x00\x01{"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := salvage([]byte(tt.in))
			require.Equal(t, tt.wantOK, s.hasGeneration)
			require.Equal(t, tt.wantGen, s.generation)
			require.Equal(t, tt.wantVer, s.version)
		})
	}
}

// TestLoadRecordBoundedMemory: a hostile 32 MiB lease.json costs a reader
// about MaxRecordSize of memory, not the file's size.
func TestLoadRecordBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, RecordFile)
	big := `{"version":1,"generation":12,"owner":{"label":"` + strings.Repeat("x", 32<<20) + `"}}`
	require.NoError(t, os.WriteFile(path, []byte(big), 0o600))
	runtime.GC()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ld, err := loadRecord(path)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.ErrorIs(t, ld.err, ErrCorruptRecord)
	require.Equal(t, uint64(12), ld.floor)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20))
}

// TestLockIsAtPath: after the lock file is replaced, the locked descriptor
// no longer matches the path, which is what makes tryLock start over and
// Check report a lost lease.
func TestLockIsAtPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFile)
	fl, err := tryLock(path)
	require.NoError(t, err)
	require.NotNil(t, fl)
	defer fl.Unlock()

	same, err := lockIsAtPath(fl, path)
	require.NoError(t, err)
	require.True(t, same)

	tmp := filepath.Join(dir, "new")
	require.NoError(t, os.WriteFile(tmp, nil, 0o600))
	require.NoError(t, os.Rename(tmp, path))
	same, err = lockIsAtPath(fl, path)
	require.NoError(t, err)
	require.False(t, same)

	// The new file is unlocked, and tryLock locks it (not the orphan).
	fl2, err := tryLock(path)
	require.NoError(t, err)
	require.NotNil(t, fl2)
	defer fl2.Unlock()
	same, err = lockIsAtPath(fl2, path)
	require.NoError(t, err)
	require.True(t, same)

	require.NoError(t, os.Remove(path))
	same, err = lockIsAtPath(fl2, path)
	require.NoError(t, err)
	require.False(t, same)
}

// TestInspectLocked covers the exact fallback of Inspect, which reads the
// record under the shared lock; Inspect only needs it under heavy churn.
func TestInspectLocked(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, dir string)
		wantState State
	}{
		{name: "nothing", setup: func(*testing.T, string) {}, wantState: Free},
		{
			name: "released",
			setup: func(t *testing.T, dir string) {
				l, err := Acquire(t.Context(), dir, Options{})
				require.NoError(t, err)
				require.NoError(t, l.Release(t.Context()))
			},
			wantState: Free,
		},
		{
			name: "stale",
			setup: func(t *testing.T, dir string) {
				require.NoError(t, writeRecordFile(dir, Record{Version: 1, Generation: 4}, false))
			},
			wantState: Stale,
		},
		{
			name: "held",
			setup: func(t *testing.T, dir string) {
				l, err := Acquire(t.Context(), dir, Options{})
				require.NoError(t, err)
				t.Cleanup(func() { _ = l.Release(context.Background()) })
			},
			wantState: Held,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			st, err := inspectLocked(filepath.Join(dir, LockFile), filepath.Join(dir, RecordFile))
			require.NoError(t, err)
			require.Equal(t, tt.wantState, st.State)
		})
	}
}
