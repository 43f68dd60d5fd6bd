package owner_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/owner"
	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/testing/unprivtest"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

func uidOf(t *testing.T, p string) uint32 {
	t.Helper()
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Uid
}

// TestInherit: as root, a file and a directory created in a directory of
// another user are given to that user; a file with a second link (one a
// link planted in the directory shares with a name elsewhere) and a
// directory root owns are left alone. Needs root.
func TestInherit(t *testing.T) {
	if !unprivtest.Root() {
		require.False(t, owner.Active())
		t.Skipf("needs root (uid %d)", os.Geteuid())
	}
	require.True(t, owner.Active())
	dir := unprivtest.OwnedDir(t, unprivtest.Nobody)
	dirInfo, err := os.Lstat(dir)
	require.NoError(t, err)
	inherit := func(p string) {
		t.Helper()
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, owner.Inherit(f, dirInfo))
	}

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o700))
	inherit(file)
	inherit(sub)
	require.Equal(t, uint32(unprivtest.Nobody), uidOf(t, file))
	require.Equal(t, uint32(unprivtest.Nobody), uidOf(t, sub))

	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("root's"), 0o600))
	linked := filepath.Join(dir, "linked")
	require.NoError(t, os.Link(secret, linked))
	inherit(linked)
	require.Equal(t, uint32(0), uidOf(t, secret), "a file with another name is never given away")

	rootDir := t.TempDir()
	rootInfo, err := os.Lstat(rootDir)
	require.NoError(t, err)
	mine := filepath.Join(rootDir, "mine")
	require.NoError(t, os.WriteFile(mine, nil, 0o600))
	f, err := os.Open(mine)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, owner.Inherit(f, rootInfo))
	require.Equal(t, uint32(0), uidOf(t, mine))
}
