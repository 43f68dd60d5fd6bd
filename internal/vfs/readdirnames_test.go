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
