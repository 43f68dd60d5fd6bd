package vfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadDirNames: the cheap listing names what ReadDir names, on the
// real file system (getdents) and on the others (ReadDir), and refuses a
// symlinked directory as every operation does.
func TestReadDirNames(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	sim := NewSim()
	for _, fsys := range []FS{OS(root), sim, NewFaulty(sim)} {
		_ = fsys.Mkdir("d", 0o700)
		for _, n := range []string{"d/b", "d/a", "d/c"} {
			f, err := fsys.OpenFile(n, os.O_WRONLY|os.O_CREATE, 0o600)
			if err == nil {
				require.NoError(t, f.Close())
			}
		}
		_ = fsys.Mkdir("d/sub", 0o700)
		names, err := ReadDirNames(fsys, "d")
		require.NoError(t, err)
		slices.Sort(names)
		require.Equal(t, []string{"a", "b", "c", "sub"}, names)
		_, err = ReadDirNames(fsys, "missing")
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	require.NoError(t, os.Symlink("d", filepath.Join(dir, "l")))
	_, err = ReadDirNames(OS(root), "l")
	require.ErrorIs(t, err, ErrSymlink)
}

// TestProbe: a probe describes what Lstat describes (the same file, size
// and time), a missing file as missing, on the real file system and on
// the others; a symlinked directory on the way may be followed, which
// Lstat refuses.
func TestProbe(t *testing.T) {
	dir, err := filepath.Abs(t.TempDir())
	require.NoError(t, err)
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	sim := NewSim()
	for _, fsys := range []FS{OS(root), sim, NewFaulty(sim)} {
		_ = fsys.Mkdir("d", 0o700) // the faulty FS wraps the same simulation
		f, err := fsys.OpenFile("d/f", os.O_WRONLY|os.O_CREATE, 0o600)
		require.NoError(t, err)
		_, err = f.Write([]byte("four"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		want, err := fsys.Lstat("d/f")
		require.NoError(t, err)
		got, err := Probe(fsys, "d/f")
		require.NoError(t, err)
		require.Equal(t, IdentityOf(want), IdentityOf(got))
		require.Equal(t, want.Size(), got.Size())
		require.True(t, want.ModTime().Equal(got.ModTime()))
		require.True(t, got.Mode().IsRegular())
		_, err = Probe(fsys, "d/missing")
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	require.NoError(t, os.Symlink("d", filepath.Join(dir, "l")))
	_, err = OS(root).Lstat("l/f")
	require.ErrorIs(t, err, ErrSymlink)
	fi, err := Probe(OS(root), "l/f")
	require.NoError(t, err, "a probe may follow a symlinked directory: what it finds is compared, never read")
	require.Equal(t, int64(4), fi.Size())
}
