package vfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithin: Within shows directory dir under the name as, on the real
// file system through the directory opened once and on the simulation by
// path: names under as read dir's files (a nested directory too, and
// through Sub), other names are fsys's own, a symlink in the directory is
// refused as fsys refuses it, and a symlink at dir is refused outright.
func TestWithin(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	for name, fsys := range map[string]FS{"os": OS(root), "sim": NewSim()} {
		t.Run(name, func(t *testing.T) {
			d, err := MakeDir(fsys, "tmp", 0o700)
			require.NoError(t, err)
			for _, f := range []string{"a", "b"} {
				w, err := d.Create(f, 0o600)
				require.NoError(t, err)
				_, err = w.Write([]byte("in tmp/" + f))
				require.NoError(t, err)
				require.NoError(t, w.Close())
			}
			sub, err := d.Mkdir("blobs", 0o700)
			require.NoError(t, err)
			w, err := sub.Create("x", 0o600)
			require.NoError(t, err)
			_, err = w.Write([]byte("in tmp/blobs/x"))
			require.NoError(t, err)
			require.NoError(t, w.Close())
			require.NoError(t, sub.Close())
			require.NoError(t, d.Close())
			require.NoError(t, Replace{Name: "top", Tmp: "top.tmp", Perm: 0o600}.Write(fsys, []byte("at the root")))

			v, err := Within(fsys, "tmp", "s1")
			require.NoError(t, err)
			defer func() { require.NoError(t, v.Close()) }()
			for name, want := range map[string]string{"s1/a": "in tmp/a", "s1/b": "in tmp/b", "s1/blobs/x": "in tmp/blobs/x", "top": "at the root"} {
				b, err := ReadFile(v, name, 100)
				require.NoError(t, err, name)
				require.Equal(t, want, string(b), name)
			}
			f, err := v.OpenFile("s1/a", os.O_RDONLY, 0)
			require.NoError(t, err)
			require.Equal(t, "tmp/a", f.Name(), "named as fsys names it")
			require.NoError(t, f.Close())
			fi, err := v.Lstat("s1")
			require.NoError(t, err)
			require.True(t, fi.IsDir())
			fi, err = v.Lstat("s1/blobs/x")
			require.NoError(t, err)
			require.True(t, fi.Mode().IsRegular())
			_, err = v.Lstat("s1/c")
			require.ErrorIs(t, err, fs.ErrNotExist)
			_, err = v.Lstat("tmp/a") // the directory's own name is outside the view's
			require.NoError(t, err)
			entries, err := v.ReadDir("s1")
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			require.Equal(t, []string{"a", "b", "blobs"}, names)
			blobs, err := Sub(v, "s1/blobs")
			require.NoError(t, err)
			b, err := ReadFile(blobs, "x", 100)
			require.NoError(t, err)
			require.Equal(t, "in tmp/blobs/x", string(b))
			require.NoError(t, blobs.Close())

			_, err = Within(fsys, "missing", "s2")
			require.ErrorIs(t, err, fs.ErrNotExist)
		})
	}

	// A symlink in the directory is refused, never followed; so is a
	// symlink at the directory itself.
	fsys := OS(root)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("elsewhere"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "tmp", "link")))
	v, err := Within(fsys, "tmp", "s1")
	require.NoError(t, err)
	_, err = v.OpenFile("s1/link", os.O_RDONLY, 0)
	require.ErrorIs(t, err, ErrSymlink)
	require.NoError(t, v.Close())
	require.NoError(t, os.Symlink(filepath.Join(dir, "tmp"), filepath.Join(dir, "tmplink")))
	_, err = Within(fsys, "tmplink", "s1")
	require.ErrorIs(t, err, ErrSymlink)
}
