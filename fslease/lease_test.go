package fslease_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
)

// TestTwoHandlesExclude: two Leases in one process exclude each other as
// two processes do (each has its own open file description).
func TestTwoHandlesExclude(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	l1 := mustAcquire(t, ctx, dir, fslease.Options{Label: "first"})

	_, err := fslease.TryAcquire(ctx, dir, fslease.Options{Label: "second"})
	require.ErrorIs(t, err, fslease.ErrHeld)
	var he *fslease.HeldError
	require.ErrorAs(t, err, &he)
	require.Equal(t, l1.Record(), *he.Holder)

	waitCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = fslease.Acquire(waitCtx, dir, fslease.Options{Label: "second"})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	st, err := fslease.Inspect(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, fslease.Held, st.State)

	require.NoError(t, l1.Release(ctx))
	l2, err := fslease.TryAcquire(ctx, dir, fslease.Options{Label: "second"})
	require.NoError(t, err)
	defer l2.Release(ctx)
	require.Equal(t, fslease.PrevReleased, l2.PreviousState())
	require.Equal(t, l1.Generation()+1, l2.Generation())
	require.NotEqual(t, l1.Record().Owner.Nonce, l2.Record().Owner.Nonce)
}

// TestTryAcquireNotFooledByProbes: Inspect's shared-lock probe, running
// in a tight loop, never makes TryAcquire of a free lease fail.
func TestTryAcquireNotFooledByProbes(t *testing.T) {
	dir := t.TempDir()
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var probes atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := fslease.Inspect(ctx, dir); err == nil {
				probes.Add(1)
			}
		}
	})
	defer wg.Wait()
	defer stop()
	for i := range 200 {
		l, err := fslease.TryAcquire(t.Context(), dir, fslease.Options{})
		require.NoError(t, err, "round %d", i)
		require.NoError(t, l.Release(t.Context()))
	}
	stop()
	wg.Wait()
	require.Positive(t, probes.Load())
}

// TestAcquireContext: Acquire waiting for a held lease returns promptly
// with the context's error when the context is cancelled or times out, and
// at once when it is already done.
func TestAcquireContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		wantErr error
	}{
		{
			name: "cancel while waiting",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(parent)
				time.AfterFunc(30*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
		{
			name: "deadline while waiting",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(parent, 30*time.Millisecond)
			},
			wantErr: context.DeadlineExceeded,
		},
		{
			name: "already cancelled",
			ctx: func(parent context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(parent)
				cancel()
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
	}
	dir := t.TempDir()
	mustAcquire(t, t.Context(), dir, fslease.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx(t.Context())
			defer cancel()
			_, err := fslease.Acquire(ctx, dir, fslease.Options{})
			done := time.Now()
			require.ErrorIs(t, err, tt.wantErr)
			// Promptly: within the poll interval (10ms) plus scheduling.
			<-ctx.Done()
			require.Less(t, done.Sub(contextDoneAt(ctx)), 250*time.Millisecond)
		})
	}
}

// contextDoneAt approximates when ctx was done: its deadline if it has one,
// otherwise now (it is already done).
func contextDoneAt(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now()
}

// TestFencing: Check reports ErrLost when the lock file or the record is
// changed under a live holder. After the lock file is replaced, a new
// holder can lock the new file and gets a higher generation; the old
// holder's Heartbeat and Release then fail with ErrLost and write nothing,
// so the new holder stays valid.
func TestFencing(t *testing.T) {
	tests := []struct {
		name string
		// mutate changes dir under the holder and returns the directory
		// where the lease now lives.
		mutate        func(t *testing.T, dir string) string
		wantNewHolder bool
	}{
		{
			name: "lock file replaced by rename",
			mutate: func(t *testing.T, dir string) string {
				tmp := filepath.Join(dir, "new.lock")
				require.NoError(t, os.WriteFile(tmp, nil, 0o600))
				require.NoError(t, os.Rename(tmp, filepath.Join(dir, fslease.LockFile)))
				return dir
			},
			wantNewHolder: true,
		},
		{
			name: "lock file removed",
			mutate: func(t *testing.T, dir string) string {
				require.NoError(t, os.Remove(filepath.Join(dir, fslease.LockFile)))
				return dir
			},
			wantNewHolder: true,
		},
		{
			name: "directory moved",
			mutate: func(t *testing.T, dir string) string {
				moved := dir + ".moved"
				require.NoError(t, os.Rename(dir, moved))
				t.Cleanup(func() { _ = os.RemoveAll(moved) })
				require.NoError(t, os.Mkdir(dir, 0o700))
				return dir
			},
			wantNewHolder: true,
		},
		{
			name: "record overwritten",
			mutate: func(t *testing.T, dir string) string {
				writeLeaseJSON(t, dir, recordJSON(t, 99, false))
				return dir
			},
		},
		{
			name: "record removed",
			mutate: func(t *testing.T, dir string) string {
				require.NoError(t, os.Remove(filepath.Join(dir, fslease.RecordFile)))
				return dir
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			dir := filepath.Join(t.TempDir(), "lease")
			require.NoError(t, os.Mkdir(dir, 0o700))
			old, err := fslease.Acquire(ctx, dir, fslease.Options{Label: "old"})
			require.NoError(t, err)
			require.NoError(t, old.Check())

			dir = tt.mutate(t, dir)
			err = old.Check()
			require.ErrorIs(t, err, fslease.ErrLost)
			var le *fslease.LostError
			require.ErrorAs(t, err, &le)
			require.Equal(t, old.Generation(), le.Generation)
			require.ErrorIs(t, old.Heartbeat(ctx), fslease.ErrLost)

			if tt.wantNewHolder {
				nl, err := fslease.TryAcquire(ctx, dir, fslease.Options{MinGeneration: old.Generation(), Label: "new"})
				require.NoError(t, err)
				require.Greater(t, nl.Generation(), old.Generation())
				require.NoError(t, nl.Check())

				require.ErrorIs(t, old.Release(ctx), fslease.ErrLost)
				require.NoError(t, nl.Check(), "the old holder's release must not touch the new holder's record")
				st, err := fslease.Inspect(ctx, dir)
				require.NoError(t, err)
				require.Equal(t, fslease.Held, st.State)
				require.Equal(t, nl.Record(), *st.Record)
				require.NoError(t, nl.Release(ctx))
			} else {
				require.ErrorIs(t, old.Release(ctx), fslease.ErrLost)
			}
			require.ErrorIs(t, old.Check(), fslease.ErrReleased)
		})
	}
}

// TestCopiedHeldDirIsStale: `cp -r` of a held lease directory yields a copy
// whose record names a live process (this one) that holds no lock on the
// copy: Inspect says Stale, and acquiring the copy succeeds with a higher
// generation and PrevStale. The original stays held and valid.
func TestCopiedHeldDirIsStale(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	require.NoError(t, os.Mkdir(src, 0o700))
	orig := mustAcquire(t, ctx, src, fslease.Options{Label: "original"})

	out, err := exec.CommandContext(ctx, "cp", "-r", src, dst).CombinedOutput()
	require.NoError(t, err, "cp: %s", out)

	st, err := fslease.Inspect(ctx, dst)
	require.NoError(t, err)
	require.Equal(t, fslease.Stale, st.State)
	require.Equal(t, os.Getpid(), st.Record.Owner.PID, "the copied record names a running pid")
	require.Equal(t, orig.Record(), *st.Record)

	cp, err := fslease.TryAcquire(ctx, dst, fslease.Options{Label: "copy"})
	require.NoError(t, err)
	defer cp.Release(ctx)
	require.Equal(t, fslease.PrevStale, cp.PreviousState())
	require.Greater(t, cp.Generation(), orig.Generation())

	require.NoError(t, orig.Check())
	st, err = fslease.Inspect(ctx, src)
	require.NoError(t, err)
	require.Equal(t, fslease.Held, st.State)
}

// TestSymlinksRefused: a symlink (or other non-regular file) planted as
// lease.lock or lease.json is refused by Acquire, TryAcquire and Inspect,
// nothing is written or created through it, and no lock is left held.
func TestSymlinksRefused(t *testing.T) {
	tests := []struct {
		name     string
		file     string // which file is planted
		plant    func(t *testing.T, path, target string)
		existing bool // the symlink target exists
		wantErr  error
	}{
		{name: "lock symlink to file", file: fslease.LockFile, plant: symlink, existing: true, wantErr: fslease.ErrSymlink},
		{name: "lock dangling symlink", file: fslease.LockFile, plant: symlink, wantErr: fslease.ErrSymlink},
		{name: "record symlink to file", file: fslease.RecordFile, plant: symlink, existing: true, wantErr: fslease.ErrSymlink},
		{name: "record dangling symlink", file: fslease.RecordFile, plant: symlink, wantErr: fslease.ErrSymlink},
		{name: "lock is a directory", file: fslease.LockFile, plant: mkdir, wantErr: fslease.ErrNotRegular},
		{name: "record is a directory", file: fslease.RecordFile, plant: mkdir, wantErr: fslease.ErrNotRegular},
		{name: "lock is a fifo", file: fslease.LockFile, plant: mkfifo, wantErr: fslease.ErrNotRegular},
		{name: "record is a fifo", file: fslease.RecordFile, plant: mkfifo, wantErr: fslease.ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "target")
			const content = "precious\n"
			if tt.existing {
				require.NoError(t, os.WriteFile(target, []byte(content), 0o644))
			}
			planted := filepath.Join(dir, tt.file)
			tt.plant(t, planted, target)
			before := listDir(t, dir)

			_, err := fslease.Acquire(ctx, dir, fslease.Options{})
			require.ErrorIs(t, err, tt.wantErr)
			_, err = fslease.TryAcquire(ctx, dir, fslease.Options{})
			require.ErrorIs(t, err, tt.wantErr)
			_, err = fslease.Inspect(ctx, dir)
			require.ErrorIs(t, err, tt.wantErr)

			if tt.existing {
				got, err := os.ReadFile(target)
				require.NoError(t, err)
				require.Equal(t, content, string(got))
			} else {
				require.NoFileExists(t, target)
			}
			after := listDir(t, dir)
			if tt.file == fslease.RecordFile {
				// Acquire created the lock file before it read the record;
				// nothing else may appear.
				after = slices.DeleteFunc(after, func(n string) bool { return n == fslease.LockFile })
			}
			require.Equal(t, before, after, "nothing created in the lease directory")

			// No lock was left held: with the planted file gone the lease
			// can be taken at once.
			require.NoError(t, os.Remove(planted))
			l, err := fslease.TryAcquire(ctx, dir, fslease.Options{})
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))
		})
	}
}

func symlink(t *testing.T, path, target string) { require.NoError(t, os.Symlink(target, path)) }
func mkdir(t *testing.T, path, _ string)        { require.NoError(t, os.Mkdir(path, 0o700)) }
func mkfifo(t *testing.T, path, _ string)       { require.NoError(t, syscall.Mkfifo(path, 0o600)) }

// listDir returns the sorted names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestInspect covers the states Inspect reports and that it creates
// nothing.
func TestInspect(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T, dir string) // with no lease held by this test
		wantState  fslease.State
		wantRecord bool
		wantErr    error // in Status.RecordErr
	}{
		{name: "empty directory", setup: func(*testing.T, string) {}, wantState: fslease.Free},
		{
			name:       "released",
			setup:      func(t *testing.T, dir string) { writeLeaseJSON(t, dir, recordJSON(t, 3, true)) },
			wantState:  fslease.Free,
			wantRecord: true,
		},
		{
			name:       "unreleased record, no lock file",
			setup:      func(t *testing.T, dir string) { writeLeaseJSON(t, dir, recordJSON(t, 3, false)) },
			wantState:  fslease.Stale,
			wantRecord: true,
		},
		{
			name: "unreleased record, unlocked lock file",
			setup: func(t *testing.T, dir string) {
				writeLeaseJSON(t, dir, recordJSON(t, 3, false))
				require.NoError(t, os.WriteFile(filepath.Join(dir, fslease.LockFile), nil, 0o600))
			},
			wantState:  fslease.Stale,
			wantRecord: true,
		},
		{
			name:      "garbage record",
			setup:     func(t *testing.T, dir string) { writeLeaseJSON(t, dir, []byte("\x00\x00\x00")) },
			wantState: fslease.Stale,
			wantErr:   fslease.ErrCorruptRecord,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			before := listDir(t, dir)
			st, err := fslease.Inspect(t.Context(), dir)
			require.NoError(t, err)
			require.Equal(t, tt.wantState, st.State)
			require.Equal(t, tt.wantRecord, st.Record != nil)
			if tt.wantErr != nil {
				require.ErrorIs(t, st.RecordErr, tt.wantErr)
			} else {
				require.NoError(t, st.RecordErr)
			}
			require.Equal(t, before, listDir(t, dir), "Inspect created or removed a file")
		})
	}

	t.Run("missing directory", func(t *testing.T) {
		_, err := fslease.Inspect(t.Context(), filepath.Join(t.TempDir(), "nope"))
		require.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("held", func(t *testing.T) {
		dir := t.TempDir()
		l := mustAcquire(t, t.Context(), dir, fslease.Options{Label: "me"})
		st, err := fslease.Inspect(t.Context(), dir)
		require.NoError(t, err)
		require.Equal(t, fslease.Held, st.State)
		require.Equal(t, l.Record(), *st.Record)
		require.GreaterOrEqual(t, st.HeartbeatAge, time.Duration(0))
	})
}

// TestReleaseIsIdempotent: Release writes Released durably once, later
// calls return nil, and Check and Heartbeat report ErrLost and
// ErrReleased afterwards.
func TestReleaseIsIdempotent(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	l, err := fslease.Acquire(ctx, dir, fslease.Options{})
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, l.Release(ctx))
	require.True(t, l.Record().Released)
	for _, err := range []error{l.Check(), l.Heartbeat(ctx)} {
		require.ErrorIs(t, err, fslease.ErrLost)
		require.ErrorIs(t, err, fslease.ErrReleased)
	}
	require.Equal(t, l.Record(), readLeaseJSON(t, dir))
}

// TestReleaseWithDoneContext: Release with a done context still unlocks
// but leaves the record unreleased (the next holder sees PrevStale).
func TestReleaseWithDoneContext(t *testing.T) {
	dir := t.TempDir()
	l, err := fslease.Acquire(t.Context(), dir, fslease.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, l.Release(ctx), context.Canceled)
	l2, err := fslease.TryAcquire(t.Context(), dir, fslease.Options{})
	require.NoError(t, err)
	defer l2.Release(t.Context())
	require.Equal(t, fslease.PrevStale, l2.PreviousState())
}

// TestFilesAndRecord: the files are 0600, lease.json holds exactly what
// Record returns, in the documented JSON shape, and leftover temporary
// files from a killed writer are swept by the next Acquire.
func TestFilesAndRecord(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	leftover := filepath.Join(dir, fslease.RecordFile+".tmp-deadbeef")
	require.NoError(t, os.WriteFile(leftover, []byte("{"), 0o600))
	fixed := time.Date(2026, 3, 1, 9, 15, 0, 123456789, time.FixedZone("CET", 3600))
	l := mustAcquire(t, ctx, dir, fslease.Options{Label: "agent-cli", MinGeneration: 41, Now: func() time.Time { return fixed }})

	require.Equal(t, []string{filepath.Base(leftover)}, l.Swept())
	require.NoFileExists(t, leftover)
	for _, name := range []string{fslease.LockFile, fslease.RecordFile} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	require.Equal(t, []string{fslease.RecordFile, fslease.LockFile}, listDir(t, dir))

	rec := l.Record()
	require.Equal(t, rec, readLeaseJSON(t, dir))
	require.Equal(t, uint64(42), rec.Generation)
	require.Equal(t, fslease.RecordVersion, rec.Version)
	require.Equal(t, fixed.UTC(), rec.AcquiredAt)
	require.Equal(t, rec.AcquiredAt, rec.HeartbeatAt)
	require.Equal(t, os.Getpid(), rec.Owner.PID)
	require.Equal(t, "agent-cli", rec.Owner.Label)
	require.Len(t, rec.Owner.Nonce, 32)
	require.NotEmpty(t, rec.Owner.BootID, "Linux has a boot ID")
	require.False(t, rec.Owner.PIDStart.IsZero(), "Linux has a process start time")
	require.WithinDuration(t, time.Now(), rec.Owner.PIDStart, time.Hour)

	var generic map[string]any
	data, err := os.ReadFile(filepath.Join(dir, fslease.RecordFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &generic))
	require.Equal(t, "2026-03-01T08:15:00.123456789Z", generic["acquired_at"])
	require.Equal(t, 42.0, generic["generation"])
	require.Equal(t, false, generic["released"])
	require.Subset(t, mapKeys(generic["owner"].(map[string]any)), []string{"host", "pid", "pid_start", "boot_id", "nonce", "label"})
}

func mapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// TestInvalidOptions: invalid options are refused before anything is
// touched.
func TestInvalidOptions(t *testing.T) {
	tests := []struct {
		name string
		opts fslease.Options
	}{
		{name: "negative heartbeat", opts: fslease.Options{HeartbeatInterval: -time.Second}},
		{name: "long label", opts: fslease.Options{Label: string(make([]byte, fslease.MaxLabelLen+1))}},
		{name: "invalid utf-8 label", opts: fslease.Options{Label: "\xff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := fslease.Acquire(t.Context(), dir, tt.opts)
			require.ErrorIs(t, err, fslease.ErrInvalidOptions)
			require.Empty(t, listDir(t, dir))
		})
	}
}

// writeLeaseJSON writes data as dir/lease.json.
func writeLeaseJSON(t testing.TB, dir string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, fslease.RecordFile), data, 0o600))
}

// readLeaseJSON parses dir/lease.json strictly (unknown fields refused).
func readLeaseJSON(t testing.TB, dir string) fslease.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, fslease.RecordFile))
	require.NoError(t, err)
	var rec fslease.Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rec))
	return rec
}

// recordJSON builds a valid version-1 record of generation gen.
func recordJSON(t testing.TB, gen uint64, released bool) []byte {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data, err := json.Marshal(fslease.Record{
		Version:     fslease.RecordVersion,
		Generation:  gen,
		Owner:       fslease.Identity{Host: "elsewhere", PID: 1, Nonce: "00ff", Label: "fixture"},
		AcquiredAt:  at,
		HeartbeatAt: at,
		Released:    released,
	})
	require.NoError(t, err)
	return data
}

func TestMoved(t *testing.T) {
	parent := t.TempDir()
	tmp := filepath.Join(parent, "tmp")
	final := filepath.Join(parent, "final")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	l, err := fslease.Acquire(context.Background(), tmp, fslease.Options{})
	require.NoError(t, err)
	require.NoError(t, os.Rename(tmp, final))
	require.ErrorIs(t, l.Check(), fslease.ErrLost, "the old path no longer holds the lock")
	require.ErrorIs(t, l.Moved(filepath.Join(parent, "elsewhere")), fslease.ErrLost)
	require.NoError(t, l.Moved(final))
	require.NoError(t, l.Check())
	require.Equal(t, final, l.Dir())
	_, err = fslease.TryAcquire(context.Background(), final, fslease.Options{})
	require.ErrorIs(t, err, fslease.ErrHeld, "the lease moved with the directory")
	require.NoError(t, l.Release(context.Background()))
	st, err := fslease.Inspect(context.Background(), final)
	require.NoError(t, err)
	require.Equal(t, fslease.Free, st.State)
}

// TestMarkReleased: a lease taken with DirSynced in a directory built
// under a temporary name and marked released before it is published is,
// to every reader, a lease released after publishing: held until
// Release, then free, with the released record, which the next holder
// sees as PrevReleased; Release writes nothing more.
func TestMarkReleased(t *testing.T) {
	ctx := t.Context()
	parent := t.TempDir()
	tmp := filepath.Join(parent, "tmp")
	final := filepath.Join(parent, "final")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	l, err := fslease.Acquire(ctx, tmp, fslease.Options{DirSynced: true, Label: "creator"})
	require.NoError(t, err)
	require.Equal(t, l.Record(), readLeaseJSON(t, tmp))
	acquired, err := os.Lstat(filepath.Join(tmp, fslease.RecordFile))
	require.NoError(t, err)
	require.NoError(t, l.MarkReleased(ctx))
	marked, err := os.Lstat(filepath.Join(tmp, fslease.RecordFile))
	require.NoError(t, err)
	require.True(t, os.SameFile(acquired, marked), "until Moved, the record is written in place")
	require.Equal(t, os.FileMode(0o600), marked.Mode().Perm())
	rec := l.Record()
	require.True(t, rec.Released)
	require.Equal(t, rec, readLeaseJSON(t, tmp))
	for _, err := range []error{l.Check(), l.Heartbeat(ctx), l.Touch(time.Now().Add(time.Hour)), l.MarkReleased(ctx)} {
		require.ErrorIs(t, err, fslease.ErrLost)
		require.ErrorIs(t, err, fslease.ErrReleased)
	}
	require.NoError(t, l.SyncRecord(), "the creator syncs the record before it publishes the directory")
	synced, err := os.Lstat(filepath.Join(tmp, fslease.RecordFile))
	require.NoError(t, err)
	require.True(t, os.SameFile(acquired, synced))
	require.NoError(t, os.Rename(tmp, final))
	require.ErrorIs(t, l.Moved(filepath.Join(parent, "elsewhere")), fslease.ErrLost)
	require.NoError(t, l.Moved(final))
	require.Equal(t, final, l.Dir())
	require.ErrorIs(t, l.Check(), fslease.ErrReleased)

	st, err := fslease.Inspect(ctx, final)
	require.NoError(t, err)
	require.Equal(t, fslease.Held, st.State, "the lock is held until Release")
	_, err = fslease.TryAcquire(ctx, final, fslease.Options{})
	require.ErrorIs(t, err, fslease.ErrHeld)

	before, err := os.Lstat(filepath.Join(final, fslease.RecordFile))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, l.Release(ctx))
	after, err := os.Lstat(filepath.Join(final, fslease.RecordFile))
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "Release wrote no record")
	require.Equal(t, rec, readLeaseJSON(t, final))
	require.Equal(t, []string{fslease.RecordFile, fslease.LockFile}, listDir(t, final))

	st, err = fslease.Inspect(ctx, final)
	require.NoError(t, err)
	require.Equal(t, fslease.Free, st.State)
	require.Equal(t, rec, *st.Record)
	l2, err := fslease.TryAcquire(ctx, final, fslease.Options{})
	require.NoError(t, err)
	defer l2.Release(ctx)
	require.Equal(t, fslease.PrevReleased, l2.PreviousState())
	prev, ok := l2.Previous()
	require.True(t, ok)
	require.Equal(t, rec, prev)
	require.Equal(t, rec.Generation+1, l2.Generation())
}

// TestMarkReleasedAfterMoved: without DirSynced, or after Moved, the
// released record MarkReleased writes is durable at once, and the
// lease reads as released after Release.
func TestMarkReleasedAfterMoved(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	l, err := fslease.Acquire(ctx, dir, fslease.Options{HeartbeatInterval: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, l.MarkReleased(ctx))
	require.Equal(t, l.Record(), readLeaseJSON(t, dir), "no heartbeat overwrote the released record")
	require.NoError(t, l.Release(ctx))
	st, err := fslease.Inspect(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, fslease.Free, st.State)

	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	l, err = fslease.Acquire(ctx, dir, fslease.Options{})
	require.NoError(t, err)
	require.ErrorIs(t, l.MarkReleased(ctx2), context.Canceled)
	require.NoError(t, l.Check(), "a failed MarkReleased leaves the lease held")
	require.NoError(t, l.Release(ctx))
	require.True(t, readLeaseJSON(t, dir).Released)
}
