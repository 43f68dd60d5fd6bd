package offline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
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

// testStore returns the tools of a root in a new directory holding
// session id's log of revs full records, the log's bytes and the offset
// of each revision's line (offs[rev-1]).
func testStore(t *testing.T, id session.SessionID, revs int, host Host) (st *Store, log []byte, offs []int) {
	t.Helper()
	dir := t.TempDir()
	osr, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = osr.Close() })
	root := &layout.Root{FS: vfs.OS(osr), Dir: dir, MaxRecordBytes: record.Cap(0), LeftoverAge: time.Minute,
		Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	require.NoError(t, root.FS.Mkdir(layout.SessionDir(id), layout.DirPerm))
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	for rev := 1; rev <= revs; rev++ {
		payload, err := sessnap.Marshal(sessiontest.Snap(t, sessiontest.Titled(string(id), fmt.Sprintf("title %d", rev))))
		require.NoError(t, err)
		offs = append(offs, len(log))
		log = append(log, record.Encode(record.Meta{Version: record.Version, Schema: sessnap.SchemaVersion, Rev: uint64(rev), Gen: 1,
			Time: at.Add(time.Duration(rev) * time.Second), Kind: record.KindFull}, payload)...)
	}
	require.NoError(t, os.WriteFile(root.Abs(layout.LogPath(id)), log, layout.FilePerm))
	return New(root, host), log, offs
}

// TestVerifySession: a sound log verifies with its records counted; a
// record damaged in the middle is a problem at its offset; a closed store
// (the host's word) checks nothing.
func TestVerifySession(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("v1")
	st, log, offs := testStore(t, id, 4, readerHost{})
	sr, err := st.VerifySession(ctx, id, false)
	require.NoError(t, err)
	require.Equal(t, 4, sr.Records)
	require.Equal(t, uint64(4), sr.Revision)
	require.Empty(t, sr.Problems)
	require.Empty(t, sr.Notes)

	// A byte of revision 2's payload flipped: revisions 3 and 4 follow it,
	// so it is corruption, not a tail.
	off := offs[1]
	damaged := append([]byte(nil), log...)
	damaged[(off+offs[2])/2] ^= 0x01
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
	st, log, _ := testStore(t, id, 3, readerHost{})
	fsys := st.root.FS
	require.NoError(t, fsys.Mkdir(layout.SessionDir(id)+"/"+layout.ForensicDir, layout.DirPerm))
	require.NoError(t, os.WriteFile(st.root.Abs(layout.SessionDir(id)+"/"+layout.ForensicDir+"/tail.bin"), make([]byte, 7), layout.FilePerm))
	require.NoError(t, os.WriteFile(st.root.Abs(layout.SummaryPath(id)), make([]byte, 11), layout.FilePerm))
	left := layout.TmpDirPrefix + string(id) + "-" + layout.RandomSuffix()
	require.NoError(t, fsys.Mkdir(left, layout.DirPerm))
	require.NoError(t, os.WriteFile(st.root.Abs(left+"/"+layout.LogFile), make([]byte, 5), layout.FilePerm))

	u, err := st.SessionUsage(ctx, id)
	require.NoError(t, err)
	require.Equal(t, sessionstore.SessionUsage{ID: id, LogBytes: int64(len(log)), ForensicBytes: 7, OtherBytes: 11,
		TotalBytes: int64(len(log)) + 18}, u)
	n, err := st.LeftoverBytes()
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	_, err = st.SessionUsage(ctx, "gone")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}
