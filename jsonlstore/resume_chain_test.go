package jsonlstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// TestResumedChainsStayBounded: a session grown by short messages, each
// appended by a writer that resumed the session (sessionstore.Resume, a
// new store opened for it, as an agent that starts a process per turn),
// keeps its delta chains near record.MaxChainDeltas and its log within
// 3× the messages' encoded bytes (FORMAT.md "Chains"). Past 1,000 deltas
// a chain goes on only while its deltas weigh less than twice its full
// record, which holds at most a page (256 KiB) of inline messages and the
// head: for these messages (delta lines of about 450 bytes) about 1,130
// deltas at most. With pages of 1 MiB the full records' tails held chains
// open past 1,900 deltas by 4,000 messages. The store's syncs are no-ops
// (vfs.Fault.Silent): the test is about the records written, not their
// durability.
func TestResumedChainsStayBounded(t *testing.T) {
	const (
		id       = "resumed-chains"
		messages = 4000
		perTurn  = 20 // messages appended per resume
	)
	ctx := t.Context()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	faulty := vfs.NewFaulty(vfs.OS(root))
	faulty.Inject(vfs.Fault{Op: vfs.OpAnySync, Times: -1, Silent: true})
	// The stores share root (nil: closing a store leaves it open).
	open := func() *Store { return newStore(dir, nil, faulty, fsLeaser{}, Options{}) }

	st := open()
	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.InState(id, session.StateIdle)), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, st.Close())
	logPath := filepath.Join(dir, id, LogFile)
	before, err := os.Stat(logPath)
	require.NoError(t, err)

	text := strings.Repeat("carry on with the next step ", 6)
	var msgBytes int64
	for n := 0; n < messages; n += perTurn {
		st := open()
		w, rec, err := sessionstore.Resume(ctx, st, id, sessionstore.AcquireOptions{})
		require.NoError(t, err)
		s, err := rec.Session()
		require.NoError(t, err)
		rev := rec.Revision
		for i := range perTurn {
			c := s.Conversation()
			m := session.TextMessage(session.RoleUser, fmt.Sprintf("turn %d: %s", n+i, text)[:160], c[len(c)-1].CreatedAt.Add(time.Second))
			require.NoError(t, s.AppendMessage(m))
			enc, err := sessnap.AppendMessage(nil, m, nil)
			require.NoError(t, err)
			msgBytes += int64(len(enc))
			snap, err := sessnap.Of(s)
			require.NoError(t, err)
			rev, err = w.Append(ctx, rev, snap)
			require.NoError(t, err)
		}
		require.NoError(t, w.Release(ctx))
		require.NoError(t, st.Close())
	}

	st = open()
	t.Cleanup(func() { st.Close() })
	run, longest, fulls := 0, 0, 0
	for info, err := range st.Records(ctx, id) {
		require.NoError(t, err)
		if info.Kind == "delta" {
			run++
			longest = max(longest, run)
			continue
		}
		run = 0
		fulls++
	}
	after, err := os.Stat(logPath)
	require.NoError(t, err)
	growth := after.Size() - before.Size()
	t.Logf("%d messages, %d resumes: log grew %d bytes for %d of messages (%.2f×), %d full records, longest chain %d deltas",
		messages, messages/perTurn, growth, msgBytes, float64(growth)/float64(msgBytes), fulls, longest)
	require.LessOrEqual(t, longest, record.MaxChainDeltas*6/5, "a chain of a resumed session outgrew the count and weight bounds")
	require.Greater(t, fulls, 2, "the chains ended with full records")
	require.LessOrEqual(t, growth, 3*msgBytes, "the log grew more than 3× the messages")

	// The latest revision loads, with every message.
	rec, err := st.Load(ctx, id)
	require.NoError(t, err)
	require.Len(t, rec.Snapshot.Messages, messages+len(sessiontest.InState(id, session.StateIdle).Conversation()))
}
