package fslease_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"io/fs"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/testing/unprivtest"
)

// Permission and symlink checks prove nothing as root, which CI runs as:
// TestPermissionTestsUnprivileged runs them again as nobody, and
// TestOtherUserCannotTakeLease needs two users.

func TestPermissionTestsUnprivileged(t *testing.T) {
	unprivtest.Run(t, unprivtest.Nobody, nil,
		"TestSymlinksRefused", "TestFilesAndRecord", "TestUmaskDoesNotLoosenModes", "TestReadOnlyDirIsAClearError")
}

// TestUmaskDoesNotLoosenModes: lease.lock and lease.json are 0600 and the
// temporary file of a replacement never looser, whatever the umask.
func TestUmaskDoesNotLoosenModes(t *testing.T) {
	ctx := t.Context()
	for _, umask := range []int{0, 0o022} {
		old := syscall.Umask(umask)
		dir := t.TempDir()
		l, err := fslease.Acquire(ctx, dir, fslease.Options{})
		require.NoError(t, err)
		require.NoError(t, l.Heartbeat(ctx))
		require.NoError(t, l.Release(ctx))
		syscall.Umask(old)
		for _, fi := range leaseFiles(t, dir) {
			require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "umask %#o: %s", umask, fi.Name())
		}
	}
}

// leaseFiles describes the files in dir, which must be the two lease
// files.
func leaseFiles(t *testing.T, dir string) []fs.FileInfo {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	out := make([]fs.FileInfo, len(entries))
	for i, e := range entries {
		out[i], err = e.Info()
		require.NoError(t, err)
	}
	return out
}

// TestReadOnlyDirIsAClearError: in a directory the user may not write,
// Acquire fails with a permission error and leaves no lock held.
// Meaningful only unprivileged: root writes anyway.
func TestReadOnlyDirIsAClearError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes every directory; TestPermissionTestsUnprivileged runs this as nobody")
	}
	ctx := t.Context()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o500))
	t.Cleanup(func() { require.NoError(t, os.Chmod(dir, 0o700)) })
	_, err := fslease.Acquire(ctx, dir, fslease.Options{})
	require.ErrorIs(t, err, fs.ErrPermission)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestOtherUserCannotTakeLease: a lease directory of one user, even
// opened up for traversal (0711), cannot be acquired, inspected or
// tampered with by another non-root user: both files are 0600. Run as
// root it acquires and releases as nobody, then tries as a second uid.
func TestOtherUserCannotTakeLease(t *testing.T) {
	const (
		roleEnv = "FSLEASE_PERM_ROLE"
		dirEnv  = "FSLEASE_PERM_DIR"
	)
	ctx := t.Context()
	switch os.Getenv(roleEnv) {
	case "create":
		dir := os.Getenv(dirEnv)
		require.NoError(t, os.Mkdir(dir, 0o700))
		l, err := fslease.Acquire(ctx, dir, fslease.Options{Label: "owner"})
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		require.NoError(t, os.Chmod(dir, 0o711))
		return
	case "other":
		dir := os.Getenv(dirEnv)
		_, err := fslease.Acquire(ctx, dir, fslease.Options{Label: "intruder"})
		require.ErrorIs(t, err, fs.ErrPermission)
		_, err = fslease.TryAcquire(ctx, dir, fslease.Options{Label: "intruder"})
		require.ErrorIs(t, err, fs.ErrPermission)
		_, err = fslease.Inspect(ctx, dir)
		require.ErrorIs(t, err, fs.ErrPermission)
		for _, name := range []string{fslease.LockFile, fslease.RecordFile} {
			_, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
			require.ErrorIs(t, err, fs.ErrPermission, name)
		}
		require.ErrorIs(t, os.WriteFile(filepath.Join(dir, "planted"), nil, 0o600), fs.ErrPermission)
		return
	}
	if !unprivtest.Root() {
		t.Skipf("needs root to act as two users (uid %d)", os.Geteuid())
	}
	dir := filepath.Join(unprivtest.OwnedDir(t, unprivtest.Nobody), "lease")
	unprivtest.Run(t, unprivtest.Nobody, []string{roleEnv + "=create", dirEnv + "=" + dir}, "TestOtherUserCannotTakeLease")
	before, err := os.ReadFile(filepath.Join(dir, fslease.RecordFile))
	require.NoError(t, err)
	unprivtest.Run(t, unprivtest.Other, []string{roleEnv + "=other", dirEnv + "=" + dir}, "TestOtherUserCannotTakeLease")
	after, err := os.ReadFile(filepath.Join(dir, fslease.RecordFile))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "the other user changed nothing")
}

// TestRootLeavesLeaseFilesToOwner: root taking, heartbeating and releasing
// a lease in another user's directory leaves lease.lock and lease.json to
// that user (and a lock file an earlier root run left is given back), so
// the owner can still take the lease. Needs root.
func TestRootLeavesLeaseFilesToOwner(t *testing.T) {
	if !unprivtest.Root() {
		t.Skipf("needs root (uid %d)", os.Geteuid())
	}
	ctx := t.Context()
	for _, leftover := range []bool{false, true} {
		dir := filepath.Join(unprivtest.OwnedDir(t, unprivtest.Nobody), "session")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chown(dir, unprivtest.Nobody, unprivtest.Nobody))
		if leftover {
			require.NoError(t, os.WriteFile(filepath.Join(dir, fslease.LockFile), nil, 0o600))
		}
		l, err := fslease.Acquire(ctx, dir, fslease.Options{Label: "root"})
		require.NoError(t, err)
		require.NoError(t, l.Heartbeat(ctx))
		require.NoError(t, l.Release(ctx))
		for _, fi := range leaseFiles(t, dir) {
			st := fi.Sys().(*syscall.Stat_t)
			require.Equal(t, [2]uint32{unprivtest.Nobody, unprivtest.Nobody}, [2]uint32{st.Uid, st.Gid}, "leftover %v: %s", leftover, fi.Name())
		}
	}
}
