package offline

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

// The tests here drive the readers among the tools (Verify's check of a
// session, disk usage) through Host alone; repair, salvage, backup and
// blob collection run on a whole store, with their crash, kill and fault
// suites, in package jsonlstore.

// readerHost is the facade as the readers need it: Check only (the rest
// of Host is nil, and calling it fails the test with a panic).
type readerHost struct {
	Host
	closed bool
}

func (h readerHost) Check(ctx context.Context, id session.SessionID) error {
	if h.closed {
		return sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return sessionstore.ValidateID(id)
}

// TestVerifySession: a sound log verifies with its records counted; a
// record damaged in the middle is a problem at its offset; a closed store
// (the host's word) checks nothing.
func TestVerifySession(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("v1")
	root, log := roottest.New(t, id, 4)
	st := New(root, readerHost{})
	sr, err := st.VerifySession(ctx, id, false)
	require.NoError(t, err)
	require.Equal(t, 4, sr.Records)
	require.Equal(t, uint64(4), sr.Revision)
	require.Empty(t, sr.Problems)
	require.Empty(t, sr.Notes)

	// A byte of revision 2's payload flipped: revisions 3 and 4 follow it,
	// so it is corruption, not a tail.
	off := log.Offsets[1]
	damaged := append([]byte(nil), log.Bytes...)
	damaged[(off+log.Offsets[2])/2] ^= 0x01
	require.NoError(t, os.WriteFile(st.root.Abs(layout.LogPath(id)), damaged, layout.FilePerm))
	sr, err = st.VerifySession(ctx, id, false)
	require.NoError(t, err)
	require.Len(t, sr.Problems, 1, "%+v", sr)
	require.Equal(t, int64(off), sr.Problems[0].Offset)
	require.Equal(t, uint64(2), sr.Problems[0].Revision)
	require.Equal(t, 1, sr.Records)

	closed := New(st.root, readerHost{closed: true})
	_, err = closed.VerifySession(ctx, id, false)
	require.ErrorIs(t, err, sessionstore.ErrClosed)
}

// TestSessionUsage counts a session's bytes by kind of file, and the
// leftovers at the root.
func TestSessionUsage(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("u1")
	root, log := roottest.New(t, id, 3)
	st := New(root, readerHost{})
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
