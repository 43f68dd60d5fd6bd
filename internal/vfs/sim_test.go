package vfs

import (
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSimStricterThanOS covers where the Sim deliberately refuses what
// OS would allow: a symlink as a leading component of any operation,
// SyncDir of a file, O_SYNC.
func TestSimStricterThanOS(t *testing.T) {
	s := NewSim()
	require.NoError(t, s.Mkdir("d", 0o700))
	create(t, s, "d/f", []byte("x"), false, false)
	require.NoError(t, s.Symlink("d", "ld"))

	_, err := s.Lstat("ld/f")
	require.ErrorIs(t, err, ErrSymlink)
	require.ErrorIs(t, s.Remove("ld/f"), ErrSymlink)
	require.ErrorIs(t, s.RemoveAll("ld/f"), ErrSymlink)
	require.ErrorIs(t, s.Rename("ld/f", "g"), ErrSymlink)
	require.ErrorIs(t, s.Rename("d/f", "ld/g"), ErrSymlink)
	_, err = s.ReadFile("ld/f")
	require.ErrorIs(t, err, ErrSymlink)

	require.ErrorIs(t, s.SyncDir("d/f"), syscall.ENOTDIR)
	_, err = s.OpenFile("d/f", os.O_WRONLY|os.O_SYNC, 0)
	require.ErrorContains(t, err, "unsupported open flags")
	require.Equal(t, []string{"d/", "d/f", "ld -> d"}, s.Tree())
}

// TestSimMetadata: permissions are recorded, times come from the clock,
// identities are per inode.
func TestSimMetadata(t *testing.T) {
	s := NewSim()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	require.NoError(t, s.Mkdir("d", 0o700))
	create(t, s, "d/f", []byte("x"), false, false)
	fi, err := s.Lstat("d")
	require.NoError(t, err)
	require.Equal(t, fs.ModeDir|0o700, fi.Mode())
	fi, err = s.Lstat("d/f")
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode())
	require.Equal(t, now, fi.ModTime())
	require.Equal(t, int64(1), fi.Size())
	id := IdentityOf(fi)
	require.Equal(t, Identity{Dev: simDev, Ino: id.Ino}, id)

	// An open file keeps its inode across rename and unlink.
	f, err := s.OpenFile("d/f", os.O_RDWR|os.O_APPEND, 0)
	require.NoError(t, err)
	require.NoError(t, s.Rename("d/f", "d/g"))
	require.NoError(t, s.Remove("d/g"))
	_, err = f.Write([]byte("y"))
	require.NoError(t, err)
	st, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, id, IdentityOf(st))
	require.Equal(t, "f", st.Name())
	require.Equal(t, int64(2), st.Size())
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	require.Equal(t, []string{"d/"}, s.Tree())
}

// TestSimOnSyncHook: the hook runs before each sync point, without the
// lock, so it may crash or snapshot the Sim; SyncCount counts sync points.
func TestSimOnSyncHook(t *testing.T) {
	s := NewSim()
	type call struct {
		op      Op
		name    string
		count   int
		durable bool // was the file durable when the hook ran?
	}
	var calls []call
	s.OnSync(func(op Op, name string) {
		c := s.Crash(seeded(1)) // must not deadlock
		calls = append(calls, call{op, name, s.SyncCount(), exists(c, "f") && len(readOrNil(s.CrashDurableOnly(), "f")) > 0})
	})
	f, err := s.OpenFile("f", os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, f.Datasync())
	require.NoError(t, s.SyncDir(""))
	require.NoError(t, f.Sync())
	d, err := s.OpenFile(".", os.O_RDONLY, 0)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, f.Close())
	require.Error(t, f.Sync()) // closed: not a sync point
	require.Error(t, s.SyncDir("nope"))
	require.Equal(t, []call{
		{OpDatasync, "f", 1, false},
		{OpSyncDir, ".", 2, false},
		{OpSync, "f", 3, true},
		{OpSync, ".", 4, true},
	}, calls)
	require.Equal(t, 4, s.SyncCount())
	s.OnSync(nil)
	require.NoError(t, s.SyncDir("."))
	require.Len(t, calls, 4)
	require.Zero(t, s.Snapshot().SyncCount())
}

// TestSimDurableContentNotAliased: after a sync the durable content shares
// memory with the current content; no later change may show through.
func TestSimDurableContentNotAliased(t *testing.T) {
	s := NewSim()
	create(t, s, "f", []byte("abcdef"), true, true)
	durable := func(s *Sim) string { return string(readOrNil(s.CrashDurableOnly(), "f")) }
	f, err := s.OpenFile("f", os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("XY")) // overwrite at 0
	require.NoError(t, err)
	require.Equal(t, "abcdef", durable(s))
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(2)) // shrink, then grow: zeroes
	require.NoError(t, f.Truncate(6))
	require.Equal(t, "XYcdef", durable(s))
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(1))
	_, err = f.Write([]byte("!")) // offset 2, past the end: a gap
	require.NoError(t, err)
	require.Equal(t, "X\x00!", string(readOrNil(s, "f")))
	require.Equal(t, "XY\x00\x00\x00\x00", durable(s))
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte("tail")) // appends never touch the durable part
	require.NoError(t, err)
	require.Equal(t, "X\x00!", durable(s))

	// A crashed Sim's files are durable and shared the same way.
	c := s.CrashAll()
	g, err := c.OpenFile("f", os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = g.Write([]byte("ZZZ"))
	require.NoError(t, err)
	require.Equal(t, "X\x00!tail", durable(c))
	require.Equal(t, "ZZZtail", string(readOrNil(c, "f")))
	require.Equal(t, "X\x00!tail", string(readOrNil(s, "f")))
}
