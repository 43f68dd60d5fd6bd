package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultyOver returns a Faulty over each kind of FS, so every fault is
// shown to reach (or not reach) a real file too.
func faultyOver(t *testing.T) map[string]func(t *testing.T) (*Faulty, FS) {
	return map[string]func(t *testing.T) (*Faulty, FS){
		"OS": func(t *testing.T) (*Faulty, FS) {
			inner := impls[0].new(t)
			return NewFaulty(inner), inner
		},
		"Sim": func(t *testing.T) (*Faulty, FS) {
			inner := NewSim()
			return NewFaulty(inner), inner
		},
	}
}

// TestFaultyShortWrite: a short write really writes the prefix to the
// underlying file, reports its length and the error.
func TestFaultyShortWrite(t *testing.T) {
	for name, mk := range faultyOver(t) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				name    string
				fault   Fault
				wantN   int
				wantErr error
			}{
				{"ENOSPC after 3 bytes", Fault{Op: OpWrite, ShortWrite: 3, Err: syscall.ENOSPC}, 3, syscall.ENOSPC},
				{"default error", Fault{Op: OpWrite, ShortWrite: 5}, 5, io.ErrShortWrite},
				{"nothing written", Fault{Op: OpWrite, Err: syscall.EIO}, 0, syscall.EIO},
				{"ShortWrite beyond the buffer", Fault{Op: OpWrite, ShortWrite: 99, Err: syscall.EFBIG}, 10, syscall.EFBIG},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f, inner := mk(t)
					file, err := f.OpenFile("log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
					require.NoError(t, err)
					f.Inject(tc.fault)
					n, err := file.Write([]byte("0123456789"))
					require.Equal(t, tc.wantN, n)
					require.ErrorIs(t, err, tc.wantErr)
					var pe *fs.PathError
					require.ErrorAs(t, err, &pe)
					require.Equal(t, "log", pe.Path)
					// The prefix is in the file, for anyone reading it.
					got, err := ReadFile(inner, "log", 100)
					require.NoError(t, err)
					require.Equal(t, "0123456789"[:tc.wantN], string(got))
					// Once: the next write goes through.
					n, err = file.Write([]byte("ab"))
					require.NoError(t, err)
					require.Equal(t, 2, n)
					require.NoError(t, file.Close())
				})
			}
		})
	}
}

// TestFaultyAfterTimesMatch: After skips matching calls; Times bounds how
// often the rule fires; Match selects by name and only matching calls
// count.
func TestFaultyAfterTimesMatch(t *testing.T) {
	isLog := func(n string) bool { return strings.HasSuffix(n, "log") }
	tests := []struct {
		name  string
		fault Fault
		// calls: the files synced in order; want: which of them fail.
		calls []string
		want  []bool
	}{
		{"first call, once", Fault{Op: OpSync}, []string{"a", "a", "a"}, []bool{true, false, false}},
		{"After 2", Fault{Op: OpSync, After: 2}, []string{"a", "a", "a", "a"}, []bool{false, false, true, false}},
		{"Times 2", Fault{Op: OpSync, After: 1, Times: 2}, []string{"a", "a", "a", "a", "a"}, []bool{false, true, true, false, false}},
		{"forever", Fault{Op: OpSync, After: 1, Times: -1}, []string{"a", "a", "a", "a"}, []bool{false, true, true, true}},
		{"Match", Fault{Op: OpSync, Match: isLog, After: 1}, []string{"log", "x", "x", "log", "log"}, []bool{false, false, false, true, false}},
		{"other op untouched", Fault{Op: OpDatasync}, []string{"a", "a"}, []bool{false, false}},
		{"anysync", Fault{Op: OpAnySync, After: 1}, []string{"a", "a"}, []bool{false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFaulty(NewSim())
			files := map[string]File{}
			for _, n := range []string{"a", "x", "log"} {
				file, err := f.OpenFile(n, os.O_WRONLY|os.O_CREATE, 0o600)
				require.NoError(t, err)
				files[n] = file
			}
			f.Inject(tc.fault)
			var got []bool
			for _, n := range tc.calls {
				err := files[n].Sync()
				if err != nil {
					require.ErrorIs(t, err, syscall.EIO) // the default
				}
				got = append(got, err != nil)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, len(tc.calls), f.Calls(OpSync))
			fired := 0
			for _, b := range tc.want {
				if b {
					fired++
				}
			}
			require.Equal(t, fired, f.Fired(OpSync))
		})
	}
}

// TestFaultyFirstRuleWins: two rules armed for one call: the first fires,
// the second stays armed for the next.
func TestFaultyFirstRuleWins(t *testing.T) {
	f := NewFaulty(NewSim())
	f.Inject(Fault{Op: OpMkdir, Err: syscall.ENOSPC})
	f.Inject(Fault{Op: OpMkdir, Err: syscall.EROFS})
	require.ErrorIs(t, f.Mkdir("a", 0o700), syscall.ENOSPC)
	require.ErrorIs(t, f.Mkdir("a", 0o700), syscall.EROFS)
	require.NoError(t, f.Mkdir("a", 0o700))
	f.Inject(Fault{Op: OpMkdir, Times: -1})
	require.Error(t, f.Mkdir("b", 0o700))
	f.Clear()
	require.NoError(t, f.Mkdir("b", 0o700))
}

// TestFaultyEveryOp: a fault on each operation returns the error without
// reaching the wrapped FS (Close still closes); the counters count every
// call.
func TestFaultyEveryOp(t *testing.T) {
	tests := []struct {
		op  Op
		run func(f *Faulty, file File) error
		// untouched checks that the wrapped FS did not do the operation.
		untouched func(t *testing.T, s *Sim)
	}{
		{OpOpen, func(f *Faulty, _ File) error {
			_, err := f.OpenFile("new", os.O_WRONLY|os.O_CREATE, 0o600)
			return err
		}, func(t *testing.T, s *Sim) { require.False(t, exists(s, "new")) }},
		{OpMkdir, func(f *Faulty, _ File) error { return f.Mkdir("d", 0o700) },
			func(t *testing.T, s *Sim) { require.False(t, exists(s, "d")) }},
		{OpRename, func(f *Faulty, _ File) error { return f.Rename("f", "g") },
			func(t *testing.T, s *Sim) { require.True(t, exists(s, "f")) }},
		{OpRenameNoReplace, func(f *Faulty, _ File) error { return f.RenameNoReplace("f", "g") },
			func(t *testing.T, s *Sim) { require.True(t, exists(s, "f")) }},
		{OpRemove, func(f *Faulty, _ File) error { return f.Remove("f") },
			func(t *testing.T, s *Sim) { require.True(t, exists(s, "f")) }},
		{OpRemoveAll, func(f *Faulty, _ File) error { return f.RemoveAll("f") },
			func(t *testing.T, s *Sim) { require.True(t, exists(s, "f")) }},
		{OpLstat, func(f *Faulty, _ File) error { _, err := f.Lstat("f"); return err }, nil},
		{OpReadDir, func(f *Faulty, _ File) error { _, err := f.ReadDir("."); return err }, nil},
		{OpSyncDir, func(f *Faulty, _ File) error { return f.SyncDir(".") },
			func(t *testing.T, s *Sim) { require.Zero(t, s.SyncCount()) }},
		{OpRead, func(_ *Faulty, file File) error {
			_, err := file.Read(make([]byte, 1))
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return err
		}, nil},
		{OpRead, func(_ *Faulty, file File) error { _, err := file.ReadAt(make([]byte, 1), 0); return err }, nil},
		{OpWrite, func(_ *Faulty, file File) error { _, err := file.Write([]byte("x")); return err },
			func(t *testing.T, s *Sim) { require.Equal(t, []byte("data"), readOrNil(s, "f")) }},
		{OpSync, func(_ *Faulty, file File) error { return file.Sync() },
			func(t *testing.T, s *Sim) { require.Zero(t, s.SyncCount()) }},
		{OpDatasync, func(_ *Faulty, file File) error { return file.Datasync() },
			func(t *testing.T, s *Sim) { require.Zero(t, s.SyncCount()) }},
		{OpTruncate, func(_ *Faulty, file File) error { return file.Truncate(0) },
			func(t *testing.T, s *Sim) { require.Equal(t, []byte("data"), readOrNil(s, "f")) }},
		{OpStat, func(_ *Faulty, file File) error { _, err := file.Stat(); return err }, nil},
		{OpClose, func(_ *Faulty, file File) error { return file.Close() },
			func(t *testing.T, s *Sim) {}},
	}
	for _, tc := range tests {
		t.Run(string(tc.op), func(t *testing.T) {
			s := NewSim()
			f := NewFaulty(s)
			file, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o600)
			require.NoError(t, err)
			_, err = file.Write([]byte("data"))
			require.NoError(t, err)
			f.Inject(Fault{Op: tc.op, Err: syscall.EROFS})
			before := f.Calls(tc.op)
			err = tc.run(f, file)
			require.ErrorIs(t, err, syscall.EROFS)
			var le *os.LinkError
			var pe *fs.PathError
			require.True(t, errors.As(err, &le) || errors.As(err, &pe), "%T", err)
			require.Equal(t, before+1, f.Calls(tc.op))
			require.Equal(t, 1, f.Fired(tc.op))
			if tc.untouched != nil {
				tc.untouched(t, s)
			}
			if tc.op == OpClose {
				// close(2) closes even when it reports an error.
				_, err := file.Write([]byte("x"))
				require.ErrorIs(t, err, fs.ErrClosed)
			}
			// The rule fired once: the same call now succeeds.
			if tc.op != OpClose {
				require.NoError(t, tc.run(f, file))
			}
		})
	}
}

// TestFaultySilent: a silent sync reports success without syncing; a
// silent write reports success without writing.
func TestFaultySilent(t *testing.T) {
	s := NewSim()
	f := NewFaulty(s)
	require.NoError(t, f.SyncDir("."))
	file, err := f.OpenFile("f", os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	f.Inject(Fault{Op: OpAnySync, Silent: true, Times: 2})
	f.Inject(Fault{Op: OpWrite, Silent: true, After: 1})
	for _, w := range []string{"kept", "lost"} {
		n, err := file.Write([]byte(w))
		require.NoError(t, err)
		require.Equal(t, 4, n)
	}
	require.NoError(t, file.Datasync())
	require.NoError(t, f.SyncDir("."))
	require.Equal(t, 1, s.SyncCount(), "only the first SyncDir reached the Sim")
	require.Equal(t, []byte("kept"), readOrNil(s, "f"))
	require.False(t, exists(s.CrashDurableOnly(), "f"))
	require.Equal(t, 3, f.Calls(OpAnySync))
	require.Equal(t, 2, f.Fired(OpAnySync))

	require.Panics(t, func() { f.Inject(Fault{Op: OpOpen, Silent: true}) })
}

// TestFaultyCounts: Calls counts every call by op.
func TestFaultyCounts(t *testing.T) {
	f := NewFaulty(NewSim())
	require.NoError(t, f.Mkdir("d", 0o700))
	file, err := f.OpenFile("d/f", os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	for range 3 {
		_, err = file.Write([]byte("x"))
		require.NoError(t, err)
		require.NoError(t, file.Datasync())
	}
	require.NoError(t, file.Sync())
	require.NoError(t, f.SyncDir("d"))
	_, err = file.ReadAt(make([]byte, 1), 0)
	require.NoError(t, err)
	require.NoError(t, file.Close())
	require.NoError(t, f.Rename("d/f", "d/g"))
	want := map[Op]int{
		OpMkdir: 1, OpOpen: 1, OpWrite: 3, OpDatasync: 3, OpSync: 1, OpSyncDir: 1,
		OpAnySync: 5, OpRead: 1, OpClose: 1, OpRename: 1, OpRemove: 0,
	}
	for op, n := range want {
		assert.Equal(t, n, f.Calls(op), op)
	}
}

// TestFaultyConcurrent: rules and counters under -race.
func TestFaultyConcurrent(t *testing.T) {
	f := NewFaulty(NewSim())
	f.Inject(Fault{Op: OpWrite, After: 50, Times: 10, Err: syscall.ENOSPC})
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for w := range 4 {
		wg.Go(func() {
			file, err := f.OpenFile(string(rune('a'+w)), os.O_WRONLY|os.O_CREATE, 0o600)
			if !assert.NoError(t, err) {
				return
			}
			for range 50 {
				if _, err := file.Write([]byte("x")); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
				_ = f.Calls(OpWrite)
			}
			assert.NoError(t, file.Close())
		})
	}
	wg.Wait()
	require.Equal(t, 10, failed)
	require.Equal(t, 200, f.Calls(OpWrite))
}
