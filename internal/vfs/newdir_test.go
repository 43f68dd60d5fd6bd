package vfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewDir: a NewDir makes new files and directories by name, on the
// real file system through its open directory and on the simulation by
// path; a taken name (a symlink too, never followed) is refused with
// fs.ErrExist, and a name of more than one component is refused. A file
// made is open for reading too.
func TestNewDir(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	for name, fsys := range map[string]FS{"os": OS(root), "sim": NewSim()} {
		t.Run(name, func(t *testing.T) {
			d, err := MakeDir(fsys, "d", 0o700)
			require.NoError(t, err)
			f, err := d.Create("a", 0o600)
			require.NoError(t, err)
			_, err = f.Write([]byte("aaa"))
			require.NoError(t, err)
			back := make([]byte, 4)
			n, _ := f.ReadAt(back, 0)
			require.Equal(t, "aaa", string(back[:n]), "what was written reads back through the same file")
			require.NoError(t, f.Close())
			_, err = d.Create("a", 0o600)
			require.ErrorIs(t, err, fs.ErrExist)

			sub, err := d.Mkdir("s", 0o700)
			require.NoError(t, err)
			f, err = sub.Create("b", 0o600)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, sub.Close())
			_, err = d.Mkdir("s", 0o700)
			require.ErrorIs(t, err, fs.ErrExist)
			require.NoError(t, d.Close())

			b, err := ReadFile(fsys, "d/a", 10)
			require.NoError(t, err)
			require.Equal(t, "aaa", string(b))
			fi, err := fsys.Lstat("d/s/b")
			require.NoError(t, err)
			require.True(t, fi.Mode().IsRegular())
			_, err = MakeDir(fsys, "d", 0o700)
			require.ErrorIs(t, err, fs.ErrExist)
		})
	}

	// A symlink planted under a name is never followed.
	fsys := OS(root)
	d, err := MakeDir(fsys, "e", 0o700)
	require.NoError(t, err)
	defer d.Close()
	target := filepath.Join(t.TempDir(), "target")
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "e", "link")))
	_, err = d.Create("link", 0o600)
	require.ErrorIs(t, err, fs.ErrExist)
	_, err = os.Lstat(target)
	require.ErrorIs(t, err, fs.ErrNotExist)
	for _, bad := range []string{"x/y", "..", ".", ""} {
		_, err = d.Create(bad, 0o600)
		require.Error(t, err, bad)
		_, err = d.Mkdir(bad, 0o700)
		require.Error(t, err, bad)
	}
}
