package jsonlstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// accessSession writes session id into the store at dir, opened with
// opts: 60 messages of pagedText (so that its full records keep their
// messages in pages under a small cap), every tenth with an image of its
// own (a blob), compacted so that its first revisions are archived. It
// returns the images.
func accessSession(t *testing.T, dir string, id session.SessionID, opts Options) [][]byte {
	t.Helper()
	ctx := context.Background()
	st, err := Open(dir, opts)
	require.NoError(t, err)
	defer st.Close()
	r := rand.New(rand.NewPCG(7, 7))
	s := sessiontest.New(string(id))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	var images [][]byte
	for i := range 60 {
		m := session.TextMessage(session.RoleUser, pagedText(r, i), sessiontest.Epoch)
		if i%10 == 5 {
			img := randomImage(uint64(i), 20<<10)
			images = append(images, img)
			m.Parts = append(m.Parts, session.Part{Type: session.PartImage, MediaType: "image/png", Data: img})
		}
		require.NoError(t, s.AppendMessage(m))
		_, err := w.Append(ctx, uint64(i+1), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	_, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 30})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	return images
}

// contentTree maps each file under dir (lease files aside: taking a
// lease rewrites them) to a digest of its content ("unreadable" for a
// file this user may not read), and each directory to "dir".
func contentTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			out[rel] = "dir"
		case d.Name() == fslease.RecordFile || d.Name() == fslease.LockFile:
		default:
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrPermission) {
				out[rel] = "unreadable" // the file under test
				return nil
			}
			require.NoError(t, err)
			out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		return nil
	}))
	return out
}

// requireNotCorruption fails unless err is the permission or I/O error
// want, and no corruption.
func requireNotCorruption(t *testing.T, err, want error, what string) {
	t.Helper()
	require.ErrorIs(t, err, want, what)
	var ce *sessionstore.CorruptionError
	require.False(t, errors.As(err, &ce), "%s: a %v is not corruption: %v", what, want, err)
}

// requireAccessRefused checks what every reader and repair does with
// session id of st while a file of it cannot be read (want is the error
// that reading it gives): loads, History, Verify and Repair report the
// error, none as corruption, and a repair — salvaging or not — changes
// nothing in the session's directory, dir.
func requireAccessRefused(t *testing.T, st *Store, id session.SessionID, dir string, want error) {
	t.Helper()
	ctx := context.Background()
	before := contentTree(t, dir)

	var herr error
	for _, err := range st.History(ctx, id) {
		if err != nil {
			herr = err
			break
		}
	}
	requireNotCorruption(t, herr, want, "History")
	vr, err := st.Verify(ctx, id)
	require.NoError(t, err)
	require.Empty(t, vr.Sessions, "not checked: %+v", vr.Sessions)
	require.Len(t, vr.Unreadable, 1)
	requireNotCorruption(t, vr.Unreadable[0].Err, want, "Verify")
	vr, err = st.VerifyWith(ctx, sessionstore.VerifyOptions{Deep: true}, id)
	require.NoError(t, err)
	require.Len(t, vr.Unreadable, 1)
	requireNotCorruption(t, vr.Unreadable[0].Err, want, "Verify deep")

	for _, opts := range []maintenance.RepairOptions{{}, {TruncateAtCorruption: true}, {Salvage: true}} {
		rep, err := st.Repair(ctx, id, opts)
		requireNotCorruption(t, err, want, fmt.Sprintf("Repair %+v", opts))
		require.Nil(t, rep.Found, "Repair %+v found no corruption", opts)
		require.Nil(t, rep.Salvaged, "Repair %+v set nothing aside", opts)
		require.Empty(t, rep.ForensicFiles, "Repair %+v", opts)
		require.Equal(t, before, contentTree(t, dir), "Repair %+v changed nothing", opts)
	}
}

// TestAccessErrorIsNotCorruption: a blob, a page, an archive segment or
// the archive's manifest that the store may not open or read (a
// permission error, an I/O error) is never reported as corruption: loads
// and verify report the error (verify lists the session as unreadable),
// and repair, salvaging or not, refuses and changes nothing. Once the
// file can be read again, every revision loads as before. (As root,
// faults stand in for permissions; TestUnreadableBlobIsNotCorruption
// makes a file unreadable for real.)
func TestAccessErrorIsNotCorruption(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{MaxRecordBytes: pagedCap}
	images := accessSession(t, dir, "acc", opts)
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	faulty := vfs.NewFaulty(vfs.OS(root))
	st := newStore(dir, root, faulty, fsLeaser{}, opts)
	defer st.Close()
	verifyAtCleanup(t, newStore(dir, root, vfs.OS(root), fsLeaser{}, opts))
	latest, err := st.Load(ctx, "acc")
	require.NoError(t, err)
	require.Equal(t, uint64(61), latest.Revision)

	names, err := blobfile.Names(st.fs, "acc")
	require.NoError(t, err)
	var page string
	for _, n := range names {
		if !blobIsImage(strings.TrimSuffix(n, blobfile.ZstSuffix), images) {
			page = n
			break
		}
	}
	require.NotEmpty(t, page, "the session keeps messages in pages")
	targets := map[string]func(name string) bool{
		"blob":     func(name string) bool { return strings.HasSuffix(name, "/"+BlobDir+"/"+hashOf(images[len(images)-1])) },
		"page":     func(name string) bool { return strings.HasSuffix(name, "/"+BlobDir+"/"+page) },
		"segment":  func(name string) bool { return strings.Contains(name, "/"+ArchiveDir+"/0") },
		"manifest": func(name string) bool { return strings.HasSuffix(name, "/"+ArchiveDir+"/"+archive.ManifestFile) },
	}
	for target, match := range targets {
		for _, f := range []vfs.Fault{
			{Op: vfs.OpOpen, Err: syscall.EACCES},
			{Op: vfs.OpOpen, Err: syscall.EIO},
			{Op: vfs.OpRead, Err: syscall.EIO},
		} {
			t.Run(fmt.Sprintf("%s/%s/%v", target, f.Op, f.Err), func(t *testing.T) {
				f.Match, f.Times = match, -1
				faulty.Inject(f)
				t.Cleanup(faulty.Clear)
				requireAccessRefused(t, st, "acc", filepath.Join(dir, "acc"), f.Err)
				require.Positive(t, faulty.Fired(f.Op), "the fault fired")
				faulty.Clear()
				rec, err := st.Load(ctx, "acc")
				require.NoError(t, err)
				require.Equal(t, latest.Snapshot, rec.Snapshot)
				vr, err := st.Verify(ctx, "acc")
				require.NoError(t, err)
				require.True(t, vr.OK(), "%+v", vr)
			})
		}
	}
}

// blobIsImage reports whether the blob of hash holds one of images.
func blobIsImage(hash string, images [][]byte) bool {
	for _, img := range images {
		if hashOf(img) == hash {
			return true
		}
	}
	return false
}

// TestUnreadableBlobIsNotCorruption: a blob, a page or an archive segment
// of mode 000, read by its owner who is not root (as a store another
// user's umask or a careless chmod leaves it), is a permission error for
// every reader, never corruption; repair and salvage refuse and change
// nothing; after chmod 600 the session loads whole. Meaningful only
// unprivileged: TestPermissionTestsUnprivileged runs it as nobody.
func TestUnreadableBlobIsNotCorruption(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file; TestPermissionTestsUnprivileged runs this as nobody")
	}
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{MaxRecordBytes: pagedCap}
	images := accessSession(t, dir, "locked", opts)
	st, err := Open(dir, opts)
	require.NoError(t, err)
	defer st.Close()
	verifyAtCleanup(t, st)
	latest, err := st.Load(ctx, "locked")
	require.NoError(t, err)
	names, err := blobfile.Names(st.fs, "locked")
	require.NoError(t, err)
	var page string
	for _, n := range names {
		if !blobIsImage(strings.TrimSuffix(n, blobfile.ZstSuffix), images) {
			page = n
		}
	}
	require.NotEmpty(t, page)
	m, err := archive.ReadManifest(st.fs, "locked")
	require.NoError(t, err)
	require.NotEmpty(t, m.Segments)
	sdir := filepath.Join(dir, "locked")
	for target, name := range map[string]string{
		"blob":    filepath.Join(sdir, BlobDir, hashOf(images[len(images)-1])),
		"page":    filepath.Join(sdir, BlobDir, page),
		"segment": filepath.Join(sdir, ArchiveDir, m.Segments[0].File),
	} {
		t.Run(target, func(t *testing.T) {
			require.NoError(t, os.Chmod(name, 0))
			t.Cleanup(func() { _ = os.Chmod(name, 0o600) })
			requireAccessRefused(t, st, "locked", sdir, fs.ErrPermission)
			require.NoError(t, os.Chmod(name, 0o600))
			rec, err := st.Load(ctx, "locked")
			require.NoError(t, err)
			require.Equal(t, latest.Snapshot, rec.Snapshot, "every message, as before")
			vr, err := st.Verify(ctx, "locked")
			require.NoError(t, err)
			require.True(t, vr.OK(), "%+v", vr)
		})
	}
}
