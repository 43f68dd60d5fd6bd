package fslease

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseStatStartTicks(t *testing.T) {
	tests := []struct {
		name   string
		stat   string
		want   uint64
		wantOK bool
	}{
		{
			name:   "plain",
			stat:   "1234 (agent) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10 18446744073709551615",
			want:   98765,
			wantOK: true,
		},
		{
			name:   "command with spaces and parens",
			stat:   "1234 (my (odd) cmd) R 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 42 1000 10",
			want:   42,
			wantOK: true,
		},
		{name: "short", stat: "1234 (x) S 1 2 3"},
		{name: "no parens", stat: "garbage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStatStartTicks([]byte(tt.stat))
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
	btime, ok := parseBootTime([]byte("cpu 1 2 3\nbtime 1700000000\nprocesses 5\n"))
	require.True(t, ok)
	require.Equal(t, int64(1700000000), btime)
}

// TestLockDescriptorIsCloseOnExec: the kernel reports O_CLOEXEC in the
// flags of the lease's lock descriptor, so exec'd children never inherit
// it (TestExecedChildDoesNotHoldLease shows the consequence).
func TestLockDescriptorIsCloseOnExec(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(context.Background(), dir, Options{})
	require.NoError(t, err)
	defer l.Release(context.Background())

	lockPath := filepath.Join(dir, LockFile)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	found := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || target != lockPath {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		require.NoError(t, err)
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
				require.NoError(t, err)
				const oCloexec = 0o2000000
				require.NotZero(t, flags&oCloexec, "fd %s flags %o", fd.Name(), flags)
				found++
			}
		}
	}
	require.Equal(t, 1, found, "exactly one descriptor on the lock file")
}
