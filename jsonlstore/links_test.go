package jsonlstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Hard links: a file of a session that shares its inode with a name
// outside the session (planted, or restored so by a backup tool) is never
// written through. SECURITY.md maps threats to these tests.

// links returns the hard link count of the file at p.
func links(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	return vfs.Links(fi)
}

// TestSummaryNeverWrittenThroughLink: summary.json hard-linked to a file
// outside the root — before a holder opens it, or while the holder has it
// open — is replaced by a file of its own at the next append; the file
// outside keeps its bytes, and the new summary.json is trusted by List.
func TestSummaryNeverWrittenThroughLink(t *testing.T) {
	for _, when := range []string{"before acquire", "while held"} {
		t.Run(when, func(t *testing.T) {
			ctx := context.Background()
			st := openTestStore(t)
			toolSession(t, st, "linked", 2)
			sumPath := filepath.Join(st.Dir(), "linked", SummaryFile)
			victim := filepath.Join(t.TempDir(), "victim")
			const content = "do not touch"
			plant := func() {
				require.NoError(t, os.WriteFile(victim, []byte(content), 0o600))
				require.NoError(t, os.Remove(sumPath))
				require.NoError(t, os.Link(victim, sumPath))
			}
			if when == "before acquire" {
				plant()
			}
			w, err := st.Acquire(ctx, "linked", sessionstore.AcquireOptions{})
			require.NoError(t, err)
			defer w.Release(ctx)
			s := sessiontest.New("linked")
			if when == "while held" {
				// The holder has summary.json open after its first append;
				// a link to that very file is then made from outside.
				_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
				require.NoError(t, err)
				require.NoError(t, os.Link(sumPath, victim+".2"))
				victim += ".2"
			}
			want, err := os.ReadFile(victim)
			require.NoError(t, err)

			for range 2 {
				require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "m", sessiontest.Epoch)))
				_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
				require.NoError(t, err)
			}
			got, err := os.ReadFile(victim)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "the file outside is untouched")
			require.Equal(t, uint64(1), links(t, sumPath), "summary.json has a file of its own")
			require.Equal(t, uint64(1), links(t, victim))

			sf, ok := logfile.ReadSummary(st.fs, "linked")
			require.True(t, ok, "the new summary.json is valid")
			require.Equal(t, w.Revision(), sf.Revision)
			page, err := st.List(ctx, summary.Query{})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			require.Equal(t, w.Revision(), page.Items[0].Revision)
		})
	}
}

// TestHardLinkedLogRefused: a log with more than one link is read as
// usual, noted by Verify, and never written: Acquire and Repair refuse it
// (ErrLinkedLog) before taking the lease, so nothing is created or
// truncated — not even an uncommitted tail, which would be cut in the
// other file too; a link made while a holder runs makes Append refuse,
// writing nothing, until the link is gone.
func TestHardLinkedLogRefused(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	logPath := toolSession(t, st, "linked", 3)
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"v":1,"sch`) // a torn tail recovery would cut
	require.NoError(t, err)
	require.NoError(t, f.Close())
	other := filepath.Join(t.TempDir(), "rsnapshot-copy")
	require.NoError(t, os.Link(logPath, other))
	want, err := os.ReadFile(other)
	require.NoError(t, err)
	before := tree(t, st.Dir())

	_, err = st.Acquire(ctx, "linked", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, ErrLinkedLog)
	_, err = st.TryAcquire(ctx, "linked", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, ErrLinkedLog)
	_, err = st.Repair(ctx, "linked", maintenance.RepairOptions{TruncateAtCorruption: true})
	require.ErrorIs(t, err, ErrLinkedLog)
	_, err = st.Compact(ctx, "linked", maintenance.CompactPolicy{KeepLast: 1}, 0)
	require.ErrorIs(t, err, ErrLinkedLog)
	rec, err := st.Load(ctx, "linked")
	require.NoError(t, err, "reading is unaffected")
	require.Equal(t, uint64(3), rec.Revision)
	rep, err := st.Verify(ctx, "linked")
	require.NoError(t, err)
	require.True(t, rep.OK(), "a link is no corruption: %+v", rep)
	noted := false
	for _, n := range rep.Sessions[0].Notes {
		noted = noted || (n.File == "linked/"+LogFile && strings.Contains(n.Message, "2 hard links"))
	}
	require.True(t, noted, "verify notes the link: %+v", rep.Sessions[0].Notes)
	got, err := os.ReadFile(other)
	require.NoError(t, err)
	require.Equal(t, want, got, "nothing was written through the link")
	require.Equal(t, before, tree(t, st.Dir()), "nothing was created")

	// Break the link: the session is usable again. Then a link made while
	// a holder runs stops its appends, and only those.
	require.NoError(t, os.Remove(other))
	w, err := st.Acquire(ctx, "linked", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	require.NoError(t, os.Link(logPath, other))
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return fi.Size()
	}
	n := size(other)
	s := sessiontest.New("linked")
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.ErrorIs(t, err, ErrLinkedLog)
	require.Equal(t, n, size(other), "nothing written")
	require.NoError(t, os.Remove(other))
	rev, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err, "the writer stays usable")
	require.Equal(t, uint64(4), rev)
}
