package roottest

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Log is a session's log as New wrote it.
type Log struct {
	// Bytes are the log's bytes.
	Bytes []byte
	// Offsets are where each revision's line starts (Offsets[rev-1]).
	Offsets []int
}

// New returns a root in a new directory of tb (the store's defaults
// applied) holding session id's log of revs full records, one revision
// each a second apart, each a snapshot of the session titled "title
// <rev>", and the log it wrote.
func New(tb testing.TB, id session.SessionID, revs int) (*layout.Root, Log) {
	tb.Helper()
	dir := tb.TempDir()
	osr, err := os.OpenRoot(dir)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = osr.Close() })
	root := &layout.Root{FS: vfs.OS(osr), Dir: dir, MaxRecordBytes: record.Cap(0), LeftoverAge: time.Minute,
		Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	require.NoError(tb, root.FS.Mkdir(layout.SessionDir(id), layout.DirPerm))
	var log Log
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	for rev := 1; rev <= revs; rev++ {
		payload, err := sessnap.Marshal(sessiontest.Snap(tb, sessiontest.Titled(string(id), fmt.Sprintf("title %d", rev))))
		require.NoError(tb, err)
		log.Offsets = append(log.Offsets, len(log.Bytes))
		log.Bytes = append(log.Bytes, record.Encode(record.Meta{Version: record.Version4, Schema: sessnap.SchemaVersion, Rev: uint64(rev), Gen: 1,
			Time: at.Add(time.Duration(rev) * time.Second), Kind: record.KindFull}, payload)...)
	}
	require.NoError(tb, os.WriteFile(root.Abs(layout.LogPath(id)), log.Bytes, layout.FilePerm))
	return root, log
}
