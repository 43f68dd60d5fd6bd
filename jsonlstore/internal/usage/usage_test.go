package usage

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/roottest"
	"github.com/sessionstore/sessionstore/session"
)

// open is the gate of a store that is open: only an invalid ID stops a
// read.
func open(_ context.Context, id session.SessionID) error { return sessionstore.ValidateID(id) }

// TestSessionUsage counts a session's bytes by kind of file, and the
// leftovers at the root.
func TestSessionUsage(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("u1")
	root, log := roottest.New(t, id, 3)
	st := New(root, open)
	fsys := st.root.FS
	require.NoError(t, fsys.Mkdir(layout.SessionDir(id)+"/"+layout.ForensicDir, layout.DirPerm))
	require.NoError(t, os.WriteFile(st.root.Abs(layout.SessionDir(id)+"/"+layout.ForensicDir+"/tail.bin"), make([]byte, 7), layout.FilePerm))
	require.NoError(t, os.WriteFile(st.root.Abs(layout.SummaryPath(id)), make([]byte, 11), layout.FilePerm))
	left := layout.TmpDirPrefix + string(id) + "-" + layout.RandomSuffix()
	require.NoError(t, fsys.Mkdir(left, layout.DirPerm))
	require.NoError(t, os.WriteFile(st.root.Abs(left+"/"+layout.LogFile), make([]byte, 5), layout.FilePerm))

	u, _, err := st.SessionUsage(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, sessionstore.SessionUsage{ID: id, LogBytes: int64(len(log.Bytes)), ForensicBytes: 7, OtherBytes: 11,
		TotalBytes: int64(len(log.Bytes)) + 18}, u)
	n, err := st.LeftoverBytes()
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	_, _, err = st.SessionUsage(ctx, "gone", nil)
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}
