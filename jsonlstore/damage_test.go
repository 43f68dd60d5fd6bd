package jsonlstore

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Damaged sessions (damage.go): a session directory whose log is missing
// or is not a regular file. Each is reported — by reads and Acquire as a
// *CorruptionError, by store-wide operations in their Unreadable lists —
// never skipped in silence, never blocking the other sessions, and nothing
// is created in it. SECURITY.md maps threats to these tests.

// damages are the ways a session's log can be unusable, each applied to
// the log at p.
var damages = []struct {
	name string
	do   func(t *testing.T, p string)
	want error // what the CorruptionError wraps
}{
	{"missing", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, logfile.ErrLogMissing},
	{"fifo", func(t *testing.T, p string) {
		require.NoError(t, os.Remove(p))
		require.NoError(t, syscall.Mkfifo(p, 0o600))
	}, vfs.ErrNotRegular},
	{"directory", func(t *testing.T, p string) {
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.Mkdir(p, 0o700))
	}, syscall.EISDIR},
	{"symlink", func(t *testing.T, p string) {
		require.NoError(t, os.Rename(p, p+".real"))
		require.NoError(t, os.Symlink(p+".real", p))
	}, vfs.ErrSymlink},
}

// requireDamaged requires err to be the corruption of session id's
// unusable log.
func idsOf(items []summary.Summary) []session.SessionID {
	out := make([]session.SessionID, len(items))
	for i := range items {
		out[i] = items[i].ID
	}
	return out
}

func requireDamaged(t *testing.T, err error, id session.SessionID, want error) {
	t.Helper()
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, sessionstore.ErrCorrupt)
	require.ErrorIs(t, err, ErrNoLog)
	require.ErrorIs(t, err, want)
	require.Equal(t, id, ce.ID)
	require.Equal(t, string(id)+"/"+LogFile, ce.Path)
}

// TestSessionWithoutLogIsReported: a session whose log.jsonl was deleted,
// its summary.json and lease files left, is corrupt — for Load, History,
// Acquire, TryAcquire, Repair and Verify — and listed as unreadable; no
// operation creates anything in it. A directory that holds nothing of a
// session is no session at all: ErrNotFound, and listings leave it out.
func TestSessionWithoutLogIsReported(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // damaged on purpose
	toolSession(t, st, "kept", 2)
	toolSession(t, st, "lost", 3)
	require.NoError(t, os.Remove(filepath.Join(st.Dir(), "lost", LogFile)))
	other := filepath.Join(st.Dir(), "photos")
	require.NoError(t, os.Mkdir(other, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(other, "a.jpg"), []byte("jpeg"), 0o600))
	before := sessionsTree(t, st.Dir())

	_, err := st.Load(ctx, "lost")
	requireDamaged(t, err, "lost", logfile.ErrLogMissing)
	for _, err := range st.History(ctx, "lost") {
		requireDamaged(t, err, "lost", logfile.ErrLogMissing)
	}
	_, err = st.Acquire(ctx, "lost", sessionstore.AcquireOptions{})
	requireDamaged(t, err, "lost", logfile.ErrLogMissing)
	_, err = st.TryAcquire(ctx, "lost", sessionstore.AcquireOptions{})
	requireDamaged(t, err, "lost", logfile.ErrLogMissing)
	_, err = st.Repair(ctx, "lost", maintenance.RepairOptions{TruncateAtCorruption: true})
	requireDamaged(t, err, "lost", logfile.ErrLogMissing)

	rep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.False(t, rep.OK(), "verify reports the session without its log")
	require.Len(t, rep.Sessions, 2)
	require.Equal(t, session.SessionID("lost"), rep.Sessions[1].ID)
	require.Len(t, rep.Sessions[1].Problems, 1)
	require.Equal(t, "lost/"+LogFile, rep.Sessions[1].Problems[0].File)
	require.True(t, rep.Sessions[0].OK())

	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{"kept"}, idsOf(page.Items))
	require.Len(t, page.Unreadable, 1)
	require.Equal(t, session.SessionID("lost"), page.Unreadable[0].ID)
	requireDamaged(t, page.Unreadable[0].Err, "lost", logfile.ErrLogMissing)

	// Not a session: no error in listings, ErrNotFound for the ID.
	_, err = st.Load(ctx, "photos")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	_, err = st.TryAcquire(ctx, "photos", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	_, err = st.Verify(ctx, "photos")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)

	require.Equal(t, before, sessionsTree(t, st.Dir()), "nothing was created or changed")
}

// TestBadSessionNeverBlocksTheStore: whatever is wrong with one session's
// log, every store-wide operation — List (scanning and from the
// watcher's index), Watch, Verify, DiskUsage, Backup — reports it with the
// reason and deals with the others as usual.
func TestBadSessionNeverBlocksTheStore(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			st := openUncheckedStore(t) // damaged on purpose
			toolSession(t, st, "a", 2)
			toolSession(t, st, "b", 2)
			toolSession(t, st, "c", 3)
			d.do(t, filepath.Join(st.Dir(), "b", LogFile))
			isB := func(us []summary.Unreadable) {
				t.Helper()
				require.Len(t, us, 1, "%+v", us)
				require.Equal(t, session.SessionID("b"), us[0].ID)
				require.NotEmpty(t, us[0].Reason)
				requireDamaged(t, us[0].Err, "b", d.want)
			}

			within(t, 10*time.Second, "list", func() {
				page, err := st.List(ctx, summary.Query{Order: summary.OrderIDAsc})
				require.NoError(t, err)
				require.Equal(t, []session.SessionID{"a", "c"}, idsOf(page.Items))
				isB(page.Unreadable)
			})
			within(t, 10*time.Second, "verify", func() {
				rep, err := st.Verify(ctx)
				require.NoError(t, err)
				require.False(t, rep.OK())
				require.Len(t, rep.Sessions, 3)
				for _, sr := range rep.Sessions {
					require.Equal(t, sr.ID != "b", sr.OK(), "%+v", sr)
				}
			})
			within(t, 10*time.Second, "du", func() {
				rep, err := st.DiskUsage(ctx)
				require.NoError(t, err)
				require.Len(t, rep.Sessions, 3, "du reads directory entries only: a bad log is a file like another")
			})
			within(t, 10*time.Second, "backup", func() {
				dest := filepath.Join(t.TempDir(), "backup")
				rep, err := st.Backup(ctx, dest)
				require.NoError(t, err)
				require.False(t, rep.OK())
				require.Len(t, rep.Sessions, 2)
				isB(rep.Unreadable)
				require.True(t, rep.Verify.OK())
			})
			within(t, 10*time.Second, "watch", func() {
				wctx, cancel := context.WithCancel(ctx)
				defer cancel()
				ch, err := st.Watch(wctx)
				require.NoError(t, err)
				seen := map[session.SessionID]summary.Change{}
				for len(seen) < 3 {
					c := <-ch
					seen[c.ID] = c
				}
				require.NotNil(t, seen["b"].Unreadable)
				isB([]summary.Unreadable{*seen["b"].Unreadable})
				require.Nil(t, seen["a"].Unreadable)
				require.Equal(t, uint64(3), seen["c"].Summary.Revision)
				// With the watcher running, List answers from its index.
				page, err := st.List(ctx, summary.Query{Order: summary.OrderIDAsc})
				require.NoError(t, err)
				require.Equal(t, []session.SessionID{"a", "c"}, idsOf(page.Items))
				isB(page.Unreadable)
			})
		})
	}
}

// TestNoLogCreatesNothing: rm (TryAcquire, then Delete), repair (both
// modes) and compaction (real and dry run) on a directory holding no log
// — a damaged session, or a directory that is no session at all — create
// nothing in it: the lease is taken only once the log is there.
func TestNoLogCreatesNothing(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // damaged on purpose
	toolSession(t, st, "damaged", 2)
	require.NoError(t, os.Remove(filepath.Join(st.Dir(), "damaged", LogFile)))
	require.NoError(t, os.Remove(filepath.Join(st.Dir(), "damaged", "lease.lock")))
	require.NoError(t, os.Remove(filepath.Join(st.Dir(), "damaged", "lease.json")))
	require.NoError(t, os.Mkdir(filepath.Join(st.Dir(), "Documents"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), "Documents", "notes.txt"), []byte("mine"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(st.Dir(), "empty"), 0o700))
	before := tree(t, st.Dir())

	for _, id := range []session.SessionID{"damaged", "Documents", "empty"} {
		want := func(err error) {
			t.Helper()
			if id == "damaged" {
				requireDamaged(t, err, id, logfile.ErrLogMissing)
			} else {
				require.ErrorIs(t, err, sessionstore.ErrNotFound)
			}
		}
		w, err := st.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "sessions-rm"})
		want(err)
		require.Nil(t, w)
		_, err = st.Acquire(ctx, id, sessionstore.AcquireOptions{})
		want(err)
		_, err = st.Repair(ctx, id, maintenance.RepairOptions{})
		want(err)
		_, err = st.Repair(ctx, id, maintenance.RepairOptions{TruncateAtCorruption: true})
		want(err)
		_, err = st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: 1}, 0)
		want(err)
		_, err = st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: 1, DryRun: true}, 0)
		want(err)
	}
	require.Equal(t, before, tree(t, st.Dir()), "nothing was created")
}
