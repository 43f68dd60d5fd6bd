package vfs

import (
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSimSyncAll: SyncAll is one sync point that makes durable exactly
// the files' content and the directories' entries it names, nothing
// else.
func TestSimSyncAll(t *testing.T) {
	s := NewSim()
	require.NoError(t, s.Mkdir("d", 0o700))
	create(t, s, "d/a", []byte("aaa"), false, false)
	create(t, s, "d/b", []byte("bbb"), false, false)
	create(t, s, "e", []byte("eee"), false, false)
	var ops []Op
	s.OnSync(func(op Op, name string) { ops = append(ops, op) })
	require.NoError(t, s.SyncAll([]string{"d/a", "d", "."}))
	require.Equal(t, []Op{OpSyncAll}, ops)
	require.Equal(t, 1, s.SyncCount())

	c := s.CrashDurableOnly()
	b, err := c.ReadFile("d/a")
	require.NoError(t, err)
	require.Equal(t, "aaa", string(b))
	b, err = c.ReadFile("d/b") // its name is durable, its content is not
	require.NoError(t, err)
	require.Empty(t, b)
	b, err = c.ReadFile("e")
	require.NoError(t, err)
	require.Empty(t, b)

	_, err = s.Lstat("missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorIs(t, s.SyncAll([]string{"d/a", "missing"}), fs.ErrNotExist)
}

// TestOSSyncAll: on the real file system SyncAll succeeds for files and
// directories, also in a Sub, and a Faulty counts it as one sync.
func TestOSSyncAll(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	fsys := OS(root)
	require.NoError(t, fsys.Mkdir("d", 0o700))
	create(t, fsys, "d/a", []byte("aaa"), false, false)
	require.NoError(t, fsys.SyncAll([]string{"d/a", "d", "."}))
	sub, err := Sub(fsys, "d")
	require.NoError(t, err)
	defer sub.Close()
	require.NoError(t, sub.SyncAll([]string{"a", "."}))

	f := NewFaulty(fsys)
	require.NoError(t, f.SyncAll([]string{"d/a"}))
	require.Equal(t, 1, f.Calls(OpAnySync))
	f.Inject(Fault{Op: OpAnySync})
	require.Error(t, f.SyncAll([]string{"d/a"}))
}
