package unprivtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

// TestUnprivileged: the child really runs as Nobody, with no
// supplementary groups, and cannot read a root-only file that root can.
func TestUnprivileged(t *testing.T) {
	const fileEnv = "UNPRIVTEST_ROOT_FILE"
	if Child() {
		require.Equal(t, Nobody, os.Geteuid())
		require.Equal(t, Nobody, os.Getegid())
		groups, err := os.Getgroups()
		require.NoError(t, err)
		require.Empty(t, groups)
		_, err = os.ReadFile(os.Getenv(fileEnv))
		require.ErrorIs(t, err, fs.ErrPermission)
		wd, err := os.Getwd()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(wd, "mine"), nil, 0o600), "the scratch directory is the child's")
		return
	}
	if !Root() {
		t.Skipf("not root (uid %d): no other user to become", os.Geteuid())
	}
	secret := filepath.Join(OwnedDir(t, 0), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("root only"), 0o600))
	scratch := Run(t, Nobody, []string{fileEnv + "=" + secret}, "TestUnprivileged")
	fi, err := os.Stat(filepath.Join(scratch, "mine"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, uint32(Nobody), fi.Sys().(*syscall.Stat_t).Uid, "the child created it as nobody")
}
