package vfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/unprivtest"
)

// The OS seam's symlink and permission behaviour proves little as root,
// which CI runs as: TestPermissionTestsUnprivileged runs it again as
// nobody.

func TestPermissionTestsUnprivileged(t *testing.T) {
	unprivtest.Run(t, unprivtest.Nobody, nil,
		"TestBehaviourMatchesOS", "TestOSModesIgnoreUmask", "TestOSPermissionErrors")
}

// osRoot opens a vfs.OS on a new directory.
func osRoot(t *testing.T) (FS, string) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return OS(root), dir
}

// TestOSModesIgnoreUmask: files and directories created through the seam
// get exactly the mode asked for when it is 0700 or 0600, under a
// permissive umask too (atomic replacements included).
func TestOSModesIgnoreUmask(t *testing.T) {
	for _, umask := range []int{0, 0o022} {
		old := syscall.Umask(umask)
		fsys, dir := osRoot(t)
		require.NoError(t, fsys.Mkdir("d", 0o700))
		f, err := fsys.OpenFile("d/f", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.NoError(t, WriteFileAtomic(fsys, "d", "g", []byte("x"), 0o600, true, ".1"))
		syscall.Umask(old)
		for name, want := range map[string]fs.FileMode{"d": 0o700, "d/f": 0o600, "d/g": 0o600} {
			fi, err := os.Lstat(filepath.Join(dir, name))
			require.NoError(t, err)
			require.Equal(t, want, fi.Mode().Perm(), "umask %#o: %s", umask, name)
		}
	}
}

// TestOSPermissionErrors: what the user may not read or write fails with
// fs.ErrPermission through the seam, so callers report it as such (not as
// a missing file or corruption). Meaningful only unprivileged.
func TestOSPermissionErrors(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads and writes everything; TestPermissionTestsUnprivileged runs this as nobody")
	}
	fsys, dir := osRoot(t)
	require.NoError(t, fsys.Mkdir("closed", 0o700))
	require.NoError(t, fsys.Mkdir("readonly", 0o700))
	f, err := fsys.OpenFile("secret", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Chmod(filepath.Join(dir, "secret"), 0))
	require.NoError(t, os.Chmod(filepath.Join(dir, "closed"), 0))
	require.NoError(t, os.Chmod(filepath.Join(dir, "readonly"), 0o500))
	t.Cleanup(func() {
		require.NoError(t, os.Chmod(filepath.Join(dir, "closed"), 0o700))
		require.NoError(t, os.Chmod(filepath.Join(dir, "readonly"), 0o700))
	})

	_, err = fsys.OpenFile("secret", os.O_RDONLY, 0)
	require.ErrorIs(t, err, fs.ErrPermission)
	_, err = fsys.ReadDir("closed")
	require.ErrorIs(t, err, fs.ErrPermission)
	_, err = fsys.OpenFile("closed/x", os.O_WRONLY|os.O_CREATE, 0o600)
	require.ErrorIs(t, err, fs.ErrPermission)
	require.ErrorIs(t, fsys.Mkdir("readonly/x", 0o700), fs.ErrPermission)
	require.ErrorIs(t, WriteFileAtomic(fsys, "readonly", "x", nil, 0o600, false, ".1"), fs.ErrPermission)
}
