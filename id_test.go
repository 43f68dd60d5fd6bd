package sessionstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// TestValidateID: the IDs that are safe as a directory name everywhere
// pass, every other is ErrInvalidID; ValidateIDs reports the first bad one.
func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "A9", "0", "ab.c_d-e", strings.Repeat("x", sessionstore.MaxIDLength), string(sessionstore.NewID())} {
		require.NoError(t, sessionstore.ValidateID(session.SessionID(id)), "%q", id)
	}
	for _, id := range []string{"", ".", "..", ".a", "-a", "_a", "a/b", `a\b`, "a b", "a\x00", "é", strings.Repeat("x", sessionstore.MaxIDLength+1)} {
		require.ErrorIs(t, sessionstore.ValidateID(session.SessionID(id)), sessionstore.ErrInvalidID, "%q", id)
	}
	require.NoError(t, sessionstore.ValidateIDs())
	require.NoError(t, sessionstore.ValidateIDs("a", "b"))
	err := sessionstore.ValidateIDs("a", "b/c", "")
	require.ErrorIs(t, err, sessionstore.ErrInvalidID)
	require.ErrorContains(t, err, `"b/c"`)
}
