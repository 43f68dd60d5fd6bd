package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/testing/unprivtest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Permission and symlink checks prove nothing as root, which CI runs as:
// TestPermissionTestsUnprivileged runs them again as nobody, and
// TestOtherUserCannotRead needs two users. Both fail as root if the
// unprivileged pass cannot run; as another user the permission tests have
// run unprivileged already.

func TestPermissionTestsUnprivileged(t *testing.T) {
	unprivtest.Run(t, unprivtest.Nobody, nil,
		"TestPermissions", "TestSymlinksRefused", "TestBadInputWritesNothing",
		"TestUmaskDoesNotLoosenModes", "TestUnreadableSessionIsAClearError", "TestUnreadableSessionNeverBlocksTheStore",
		"TestSummaryNeverWrittenThroughLink", "TestHardLinkedLogRefused", "TestRepairSweepsOnlyOurLeftovers",
		"TestBackupInsideStoreRefused", "TestNoLogCreatesNothing", "TestAcquireSweepsOnlyOurTemps",
		"TestUnreadableBlobIsNotCorruption", "TestSearchIndexUnreadable")
}

// TestUmaskDoesNotLoosenModes: every directory the store creates is 0700
// and every file 0600 (root, session, log, lease files, summary, archive,
// forensic), whatever the umask — a permissive umask of 0 included.
func TestUmaskDoesNotLoosenModes(t *testing.T) {
	ctx := context.Background()
	for _, umask := range []int{0, 0o022, 0o077} {
		old := syscall.Umask(umask)
		root := filepath.Join(t.TempDir(), "store")
		st, err := Open(root, Options{Search: searchindex.New()})
		require.NoError(t, err)
		s := sessiontest.New("modes")
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		for r := uint64(1); r < 4; r++ {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "m", sessiontest.Epoch)))
			_, err := w.Append(ctx, r, sessiontest.Snap(t, s))
			require.NoError(t, err)
		}
		_, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 1})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
		// A torn tail makes the next holder write a forensic file.
		f, err := os.OpenFile(filepath.Join(root, "modes", LogFile), os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"v":1,"sch`)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		w, err = st.Acquire(ctx, "modes", sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, w.Recovery().ForensicFile)
		require.NoError(t, w.Release(ctx))
		require.NoError(t, st.Close())
		syscall.Umask(old)

		kinds := map[string]bool{}
		for p, mode := range tree(t, root) {
			kinds[filepath.Base(p)] = true
			if mode.IsDir() {
				require.Equal(t, fs.FileMode(0o700), mode.Perm(), "umask %#o: %s", umask, p)
			} else {
				require.Equal(t, fs.FileMode(0o600), mode.Perm(), "umask %#o: %s", umask, p)
			}
		}
		for _, name := range []string{".", "modes", LogFile, "lease.lock", "lease.json", SummaryFile, ArchiveDir, archive.ManifestFile, ForensicDir} {
			require.True(t, kinds[name], "umask %#o: no %s was checked", umask, name)
		}
	}
}

// TestUnreadableSessionIsAClearError: a session directory its owner made
// unreadable gives a permission error (errors.Is fs.ErrPermission), never
// a corruption report, and nothing is changed. Meaningful only
// unprivileged: root reads it anyway.
func TestUnreadableSessionIsAClearError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory; TestPermissionTestsUnprivileged runs this as nobody")
	}
	ctx := context.Background()
	st := openTestStore(t)
	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New("locked")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	dir := filepath.Join(st.Dir(), "locked")
	before := tree(t, dir)
	require.NoError(t, os.Chmod(dir, 0))
	t.Cleanup(func() { require.NoError(t, os.Chmod(dir, 0o700)) })

	_, err = st.Load(ctx, "locked")
	require.ErrorIs(t, err, fs.ErrPermission)
	var ce *sessionstore.CorruptionError
	require.False(t, errors.As(err, &ce), "a permission problem is not corruption: %v", err)
	_, err = st.Acquire(ctx, "locked", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, fs.ErrPermission)
	require.False(t, errors.As(err, &ce), "a permission problem is not corruption: %v", err)

	require.NoError(t, os.Chmod(dir, 0o700))
	require.Equal(t, before, tree(t, dir), "nothing changed")
}

// TestOtherUserCannotRead: a session created by one user cannot be read
// or written by another (non-root) user — the store refuses to open
// another user's root, and its files cannot be opened directly — even when
// the owner has opened up the store root (0755) or the session directory
// itself (0711): the directory is 0700 and every file 0600. Run as root, it creates the store as nobody and reads it as a
// second uid; in those children it plays each part.
func TestOtherUserCannotRead(t *testing.T) {
	const (
		roleEnv  = "JSONLSTORE_PERM_ROLE"
		storeEnv = "JSONLSTORE_PERM_STORE"
	)
	ctx := context.Background()
	switch os.Getenv(roleEnv) {
	case "create":
		root := os.Getenv(storeEnv)
		st, err := Open(root, Options{Search: searchindex.New()})
		require.NoError(t, err)
		defer st.Close()
		for _, id := range []string{"closed", "traversable"} {
			w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New(id)), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.New(id)))
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
		}
		require.NoError(t, os.Chmod(root, 0o755))
		require.NoError(t, os.Chmod(filepath.Join(root, "traversable"), 0o711))
		return
	case "read":
		root := os.Getenv(storeEnv)
		_, err := Open(root, Options{Search: searchindex.New()})
		require.ErrorIs(t, err, ErrUnsafeRoot, "another user's store is not opened")
		for _, id := range []session.SessionID{"closed", "traversable"} {
			for _, name := range []string{LogFile, "lease.json", "lease.lock", SummaryFile} {
				_, err := os.ReadFile(filepath.Join(root, string(id), name))
				require.ErrorIs(t, err, fs.ErrPermission, "%s/%s", id, name)
				_, err = os.OpenFile(filepath.Join(root, string(id), name), os.O_WRONLY, 0)
				require.ErrorIs(t, err, fs.ErrPermission, "%s/%s for writing", id, name)
			}
		}
		_, err = os.ReadDir(filepath.Join(root, "closed"))
		require.ErrorIs(t, err, fs.ErrPermission)
		return
	}
	if !unprivtest.Root() {
		t.Skipf("needs root to act as two users (uid %d)", os.Geteuid())
	}
	store := filepath.Join(unprivtest.OwnedDir(t, unprivtest.Nobody), "store")
	unprivtest.Run(t, unprivtest.Nobody, []string{roleEnv + "=create", storeEnv + "=" + store}, "TestOtherUserCannotRead")
	fi, err := os.Stat(filepath.Join(store, "closed", LogFile))
	require.NoError(t, err)
	require.Equal(t, uint32(unprivtest.Nobody), fi.Sys().(*syscall.Stat_t).Uid, "created by nobody")
	unprivtest.Run(t, unprivtest.Other, []string{roleEnv + "=read", storeEnv + "=" + store}, "TestOtherUserCannotRead")
}

// TestRootLeavesFilesToOwner: root working on another user's store —
// compacting (archive/, segments, manifest, a new log), repairing
// (forensic/, the cut bytes, summary.json moved aside), recovering a torn
// tail, appending (summary.json), creating and deleting sessions — leaves
// every file and directory it creates to the store's owner, who then
// lists, verifies and drives every session as before. Run as root, it
// creates the store as nobody, works on it as root, and uses it as nobody
// again.
func TestRootLeavesFilesToOwner(t *testing.T) {
	const (
		roleEnv  = "JSONLSTORE_OWNER_ROLE"
		storeEnv = "JSONLSTORE_OWNER_STORE"
	)
	ctx := context.Background()
	ids := []session.SessionID{"compacted", "repaired", "recovered"}
	switch os.Getenv(roleEnv) {
	case "create":
		st, err := Open(os.Getenv(storeEnv), Options{Search: searchindex.New()})
		require.NoError(t, err)
		defer st.Close()
		for _, id := range ids {
			toolSession(t, st, id, 5)
		}
		return
	case "use":
		st, err := Open(os.Getenv(storeEnv), Options{Search: searchindex.New()})
		require.NoError(t, err)
		defer st.Close()
		page, err := st.List(ctx, summary.Query{})
		require.NoError(t, err)
		require.Empty(t, page.Unreadable)
		require.Len(t, page.Items, len(ids)+1)
		rep, err := st.Verify(ctx)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%+v", rep)
		for _, s := range page.Items {
			w, err := st.Acquire(ctx, s.ID, sessionstore.AcquireOptions{})
			require.NoError(t, err, "the owner drives %s", s.ID)
			_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, sessiontest.New(string(s.ID))))
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
		}
		return
	}
	if !unprivtest.Root() {
		t.Skipf("needs root to act as root and as another user (uid %d)", os.Geteuid())
	}
	root := filepath.Join(unprivtest.OwnedDir(t, unprivtest.Nobody), "store")
	unprivtest.Run(t, unprivtest.Nobody, []string{roleEnv + "=create", storeEnv + "=" + root}, "TestRootLeavesFilesToOwner")

	st, err := Open(root, Options{Search: searchindex.New()})
	require.NoError(t, err, "root opens any user's store")
	defer st.Close()
	_, err = st.Compact(ctx, "compacted", maintenance.CompactPolicy{KeepLast: 1}, 0)
	require.NoError(t, err)
	logOf := func(id session.SessionID) string { return filepath.Join(root, string(id), LogFile) }
	data, err := os.ReadFile(logOf("repaired"))
	require.NoError(t, err)
	toolFlip(t, logOf("repaired"), int64(bytes.IndexByte(data, '\n')+20)) // revision 2
	_, err = st.Repair(ctx, "repaired", maintenance.RepairOptions{TruncateAtCorruption: true})
	require.NoError(t, err)
	f, err := os.OpenFile(logOf("recovered"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"v":1,"sch`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Remove(filepath.Join(root, "recovered", SummaryFile)))
	w, err := st.Acquire(ctx, "recovered", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, w.Recovery().ForensicFile)
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, sessiontest.New("recovered")))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	toolSession(t, st, "by-root", 2)
	toolSession(t, st, "deleted", 1)
	w, err = st.Acquire(ctx, "deleted", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx))

	kinds := map[string]bool{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		require.Equal(t, [2]uint32{unprivtest.Nobody, unprivtest.Nobody}, [2]uint32{st.Uid, st.Gid}, "owner of %s", p)
		kinds[filepath.Base(filepath.Dir(p))+"/"+d.Name()] = true
		return nil
	}))
	for _, name := range []string{"compacted/" + ArchiveDir, ArchiveDir + "/" + archive.ManifestFile, "repaired/" + ForensicDir, "by-root/" + LogFile, "recovered/" + SummaryFile} {
		require.True(t, kinds[name], "%s was checked: %v", name, kinds)
	}
	unprivtest.Run(t, unprivtest.Nobody, []string{roleEnv + "=use", storeEnv + "=" + root}, "TestRootLeavesFilesToOwner")
}

// TestUnreadableSessionNeverBlocksTheStore: a session whose log the user
// may not read (as one root left behind, 0600 and root's, would be) is
// reported by List, Watch, Verify and Backup as unreadable, with an error
// matching fs.ErrPermission and not as corruption, and the other sessions
// are dealt with as usual. Meaningful only unprivileged: root reads it
// anyway.
func TestUnreadableSessionNeverBlocksTheStore(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file; TestPermissionTestsUnprivileged runs this as nobody")
	}
	ctx := context.Background()
	st := openTestStore(t)
	toolSession(t, st, "a", 2)
	toolSession(t, st, "locked", 2)
	toolSession(t, st, "c", 2)
	logPath := filepath.Join(st.Dir(), "locked", LogFile)
	require.NoError(t, os.Remove(filepath.Join(st.Dir(), "locked", SummaryFile)))
	require.NoError(t, os.Chmod(logPath, 0))
	t.Cleanup(func() { require.NoError(t, os.Chmod(logPath, 0o600)) })
	isLocked := func(us []summary.Unreadable) {
		t.Helper()
		require.Len(t, us, 1, "%+v", us)
		require.Equal(t, session.SessionID("locked"), us[0].ID)
		require.ErrorIs(t, us[0].Err, fs.ErrPermission)
		var ce *sessionstore.CorruptionError
		require.False(t, errors.As(us[0].Err, &ce), "a permission problem is not corruption: %v", us[0].Err)
	}

	page, err := st.List(ctx, summary.Query{Order: summary.OrderIDAsc})
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{"a", "c"}, idsOf(page.Items))
	isLocked(page.Unreadable)
	rep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Len(t, rep.Sessions, 2)
	isLocked(rep.Unreadable)
	brep, err := st.Backup(ctx, filepath.Join(t.TempDir(), "backup"))
	require.NoError(t, err)
	require.Len(t, brep.Sessions, 2)
	isLocked(brep.Unreadable)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := st.Watch(wctx)
	require.NoError(t, err)
	within(t, 10*time.Second, "watch", func() {
		for c := range ch {
			if c.ID == "locked" {
				require.NotNil(t, c.Unreadable)
				isLocked([]summary.Unreadable{*c.Unreadable})
				return
			}
		}
	})
	page, err = st.List(ctx, summary.Query{Order: summary.OrderIDAsc})
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{"a", "c"}, idsOf(page.Items))
	isLocked(page.Unreadable)
}

// TestSearchIndexUnreadable: an index this user may not read or write (a
// file of another user's; here its mode 000) is a permission error,
// never "no index" nor damage: a search answers from the logs, reindex
// fails with an error matching fs.ErrPermission, VerifySearch reports
// it unreadable, and the file is left as it is. Meaningful only
// unprivileged: root reads it anyway.
func TestSearchIndexUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file; TestPermissionTestsUnprivileged runs this as nobody")
	}
	ctx := context.Background()
	st := openTestStore(t)
	qs := searchWorkload(t, st, 400, 4)
	requireSameAsHistory(t, st, qs, "before")
	require.NoError(t, st.Close())
	p := filepath.Join(st.Dir(), searchFile)
	require.NoError(t, os.Chmod(p, 0))
	t.Cleanup(func() { _ = os.Chmod(p, 0o600) })
	before := tree(t, filepath.Join(st.Dir(), SearchDir))
	fi, err := os.Stat(p)
	require.NoError(t, err)

	st, err = Open(st.Dir(), Options{Search: searchindex.New()})
	require.NoError(t, err)
	defer st.Close()
	requireSameAsHistory(t, st, qs, "unreadable index")
	_, err = st.ReindexSearch(ctx)
	require.ErrorIs(t, err, fs.ErrPermission)
	require.NotErrorIs(t, err, searchdb.ErrMissing)
	require.NotErrorIs(t, err, searchdb.ErrDamaged)
	rep, err := st.VerifySearch(ctx)
	require.NoError(t, err)
	require.Equal(t, SearchIndexUnreadable, rep.State, "%+v", rep)
	require.False(t, rep.OK())

	require.Equal(t, before, tree(t, filepath.Join(st.Dir(), SearchDir)), "nothing changed")
	after, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(fi, after) && fi.ModTime().Equal(after.ModTime()), "the index is left as it is")
	require.NoError(t, os.Chmod(p, 0o600))
}
