package jsonlstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/unprivtest"
)

// TestUnsafeRootRefused: a store root that other users may write (a
// SESSIONSTORE_DIR under /tmp made by someone else, a group-writable
// directory) is refused with ErrUnsafeRoot; so is one owned by another
// user (TestOtherUserCannotRead opens one as a second uid).
func TestUnsafeRootRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702, 0o1777} {
		root := filepath.Join(t.TempDir(), "store")
		require.NoError(t, os.Mkdir(root, 0o700))
		require.NoError(t, os.Chmod(root, mode))
		_, err := Open(root, Options{})
		require.ErrorIs(t, err, ErrUnsafeRoot, "mode %v", mode)
	}
	for _, mode := range []os.FileMode{0o700, 0o750, 0o755, 0o711} {
		root := filepath.Join(t.TempDir(), "store")
		require.NoError(t, os.Mkdir(root, 0o700))
		require.NoError(t, os.Chmod(root, mode))
		st, err := Open(root, Options{})
		require.NoError(t, err, "mode %v", mode)
		require.NoError(t, st.Close())
	}
	if unprivtest.Root() {
		// Root may open any user's store (an administrator inspecting it).
		root := filepath.Join(unprivtest.OwnedDir(t, unprivtest.Nobody), "store")
		require.NoError(t, os.Mkdir(root, 0o700))
		require.NoError(t, os.Chown(root, unprivtest.Nobody, unprivtest.Nobody))
		st, err := Open(root, Options{})
		require.NoError(t, err)
		require.NoError(t, st.Close())
	}
}
