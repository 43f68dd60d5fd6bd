package jsonlstore

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// A fork's blobs and pages are its parent's files (hard links, else
// clones, else copies); nothing done to one session changes the other's.

// forkParent writes session id with n messages, each a paged-size text and
// a distinct 64 KiB image, into st (opened with MaxRecordBytes pagedCap,
// so that its full records keep pages).
func forkParent(t *testing.T, st *Store, id session.SessionID, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 5))
	w, _ := blobSession(t, st, id, n, func(i int) string { return pagedText(r, i) }, func(i int) []byte {
		img := make([]byte, 64<<10)
		for j := range img {
			img[j] = byte(r.Uint32())
		}
		return img
	})
	require.NoError(t, w.Release(context.Background()))
}

// blobFiles describes each file of session id's blobs/: name → inode,
// link count and SHA-256 of its bytes.
type blobFile struct {
	ino, links uint64
	sum        [32]byte
}

func blobFiles(t *testing.T, root string, id session.SessionID) map[string]blobFile {
	t.Helper()
	dir := filepath.Join(root, string(id), "blobs")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string]blobFile{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = blobFile{ino: vfs.IdentityOf(fi).Ino, links: vfs.Links(fi), sum: sha256.Sum256(b)}
	}
	return files
}

// requireSameContent fails unless session a at revision ra and b at rb
// hold the same conversation, content included.
func requireSameContent(t *testing.T, st sessionstore.Store, a session.SessionID, ra uint64, b session.SessionID, rb uint64) {
	t.Helper()
	ctx := context.Background()
	x, err := st.LoadWith(ctx, a, sessionstore.LoadOptions{Revision: ra})
	require.NoError(t, err)
	y, err := st.LoadWith(ctx, b, sessionstore.LoadOptions{Revision: rb})
	require.NoError(t, err)
	xs, err := x.Session()
	require.NoError(t, err)
	ys, err := y.Session()
	require.NoError(t, err)
	require.Positive(t, xs.MessageCount())
	require.Equal(t, xs.Conversation(), ys.Conversation())
}

// TestForkSharesBlobs: a fork's blobs and pages are hard links of its
// parent's files (the same inodes), its content loads as the parent's
// revision; compacting the fork, appending to it and deleting it leave
// every byte and inode of the parent's blobs as they were; deleting the
// parent leaves a second fork whole; `cp -r` of a fork's directory is a
// store of its own, with files of its own; du counts a shared file once.
func TestForkSharesBlobs(t *testing.T) {
	ctx := context.Background()
	st := openTestStoreWith(t, Options{MaxRecordBytes: pagedCap})
	root := st.Dir()
	forkParent(t, st, "parent", 40)
	parentBefore := blobFiles(t, root, "parent")

	for _, id := range []session.SessionID{"fork-a", "fork-b"} {
		w, err := st.Fork(ctx, "parent", 30, id, sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
		requireSameContent(t, st, "parent", 30, id, 1)
	}
	forkFiles := blobFiles(t, root, "fork-a")
	require.NotEmpty(t, forkFiles)
	for name, f := range forkFiles {
		p, ok := parentBefore[name]
		require.True(t, ok, "fork blob %s is the parent's", name)
		require.Equal(t, p.ino, f.ino, "fork blob %s is a hard link of the parent's", name)
		require.Equal(t, uint64(3), f.links, "parent, fork-a and fork-b")
	}
	// The fork of revision 30 references 30 images and the pages of its
	// full record: fewer files than the parent's 40 images and pages.
	require.Less(t, len(forkFiles), len(parentBefore))

	// Verify finds nothing to say of blobs with several links (a blob is
	// never written through any of its names), and a backup of the store
	// copies each session whole, parent and forks alike.
	vr, err := st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, vr.OK(), "%+v", vr)
	for _, sv := range vr.Sessions {
		require.Empty(t, sv.Notes, "session %s", sv.ID)
	}
	backup := t.TempDir() + "/backup"
	_, err = st.Backup(ctx, backup)
	require.NoError(t, err)
	bst := openTestStore2(t, backup)
	requireSameContent(t, bst, "parent", 30, "fork-b", 1)
	for name, f := range blobFiles(t, backup, "fork-a") {
		require.Equal(t, uint64(1), f.links, "backed-up blob %s is a file of its own", name)
	}

	// du: each session's figures are whole; the total counts a shared file
	// once, and says how much is shared.
	rep, err := st.DiskUsage(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Sessions, 3)
	forkBlobBytes := rep.Sessions[0].BlobBytes // fork-a, fork-b, parent
	require.Positive(t, forkBlobBytes)
	var sum int64
	for _, u := range rep.Sessions {
		sum += u.TotalBytes
		require.Equal(t, forkBlobBytes, u.SharedBytes, "session %s shares the forks' blobs", u.ID)
	}
	require.Equal(t, sum-2*forkBlobBytes, rep.Total.TotalBytes, "the forks' blobs counted once, within the parent's")
	require.Equal(t, forkBlobBytes, rep.Total.SharedBytes, "the shared files, once")

	// The fork grows, is compacted down to its last revision (its blobs
	// of trimmed revisions go with them), then deleted: the parent's blob
	// files keep their inodes and bytes.
	w, err := st.Acquire(ctx, "fork-a", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := st.Load(ctx, "fork-a")
	require.NoError(t, err)
	s, err := rec.Session()
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "after the fork", sessiontest.Epoch)))
	_, err = w.Append(ctx, rec.Revision, sessiontest.Snap(t, s))
	require.NoError(t, err)
	_, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 1})
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx))
	require.Equal(t, parentBefore, withLinks(blobFiles(t, root, "parent"), parentBefore), "the parent's blobs as they were")

	// The parent deleted, the other fork loads whole and verifies.
	requireSameContent(t, st, "fork-b", 1, "fork-b", 0)
	pw, err := st.Acquire(ctx, "parent", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, pw.Delete(ctx))
	vr, err = st.Verify(ctx, "fork-b")
	require.NoError(t, err)
	require.True(t, vr.OK(), "%+v", vr)

	// cp -r of the fork's directory is a session of its own elsewhere.
	other := t.TempDir()
	out, err := exec.Command("cp", "-r", filepath.Join(root, "fork-b"), other).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for name, f := range blobFiles(t, other, "fork-b") {
		require.Equal(t, uint64(1), f.links, "copied blob %s has a file of its own", name)
	}
	st2 := openTestStore2(t, other)
	requireSameContent(t, st2, "fork-b", 1, "fork-b", 0)
}

// withLinks returns files with each link count taken from want: what a
// fork changes of its parent's files is their link count, nothing else.
func withLinks(files, want map[string]blobFile) map[string]blobFile {
	for name, f := range files {
		if w, ok := want[name]; ok {
			f.links = w.links
			files[name] = f
		}
	}
	return files
}

// TestForkCopiesWhereNoLink: on a file system that refuses every hard
// link, a fork's blobs are copies (clones where the file system clones),
// files of their own, and the fork loads as its parent.
func TestForkCopiesWhereNoLink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{MaxRecordBytes: pagedCap}
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	faulty := vfs.NewFaulty(vfs.OS(root))
	faulty.Inject(vfs.Fault{Op: vfs.OpLink, Times: -1})
	st := newStore(dir, root, faulty, fsLeaser{}, opts)
	defer st.Close()
	verifyAtCleanup(t, newStore(dir, root, vfs.OS(root), fsLeaser{}, opts))
	forkParent(t, st, "parent", 12)
	w, err := st.Fork(ctx, "parent", 0, "fork", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	requireSameContent(t, st, "parent", 0, "fork", 0)
	parent := blobFiles(t, dir, "parent")
	copied := 0
	for name, f := range blobFiles(t, dir, "fork") {
		p, ok := parent[name]
		if !ok {
			continue // a page of the fork's own full record
		}
		copied++
		require.Equal(t, p.sum, f.sum, "blob %s", name)
		require.NotEqual(t, parent[name].ino, f.ino, "blob %s is a file of its own", name)
		require.Equal(t, uint64(1), f.links)
	}
	require.GreaterOrEqual(t, copied, 12, "the 12 images at least")
}

// openTestStore2 opens the store at dir, closed at cleanup and verified.
func openTestStore2(t *testing.T, dir string) *Store {
	t.Helper()
	st, err := Open(dir, Options{MaxRecordBytes: pagedCap})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	verifyAtCleanup(t, st)
	return st
}
