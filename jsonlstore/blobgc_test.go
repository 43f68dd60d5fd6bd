package jsonlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// randomImage is n incompressible bytes drawn from seed.
func randomImage(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func imageMessage(img []byte) session.Message {
	m := session.TextMessage(session.RoleUser, "look", sessiontest.Epoch)
	m.Parts = append(m.Parts, session.Part{Type: session.PartImage, MediaType: "image/png", Data: img})
	return m
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// blobExists reports whether session id holds a blob of content b.
func blobExists(t *testing.T, st *Store, id session.SessionID, b []byte) bool {
	t.Helper()
	names, err := blobfile.Names(st.fs, id)
	require.NoError(t, err)
	for _, n := range names {
		if strings.TrimSuffix(n, blobfile.ZstSuffix) == hashOf(b) {
			return true
		}
	}
	return false
}

// TestCompactionCollectsUnreferencedBlobs: a compaction that trims removes
// the blobs no record references — one a refused append left, one a crash
// left, a torn temporary file — and keeps every blob a revision still
// references, the archived ones included; the holder then stores a
// removed blob's content again when an append attaches it.
func TestCompactionCollectsUnreferencedBlobs(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	kept, refused, crashed := randomImage(1, 64<<10), randomImage(2, 64<<10), randomImage(3, 64<<10)

	s := sessiontest.New("gc")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rev := uint64(1)
	appendMsg := func(m session.Message) {
		require.NoError(t, s.AppendMessage(m))
		_, err := w.Append(ctx, rev, sessiontest.Snap(t, s))
		require.NoError(t, err)
		rev++
	}
	appendMsg(imageMessage(kept))
	// The conversation is rewritten without the image: only archived
	// revisions will reference it.
	s = sessiontest.New("gc")
	for range 5 {
		appendMsg(session.TextMessage(session.RoleUser, "go on", sessiontest.Epoch))
	}

	// An append refused after its image went out of line (the tool call
	// beside it is above the cap) leaves a blob nothing references.
	m := imageMessage(refused)
	m.Parts = append(m.Parts, session.Part{Type: session.PartToolCall, ToolCallID: "c", Name: "write",
		Input: []byte(`"` + strings.Repeat("x", sessionstore.DefaultMaxRecordBytes) + `"`)})
	big := sessiontest.Snap(t, s)
	big.Messages = append(append(sessnap.Messages(nil), big.Messages...), m)
	_, err = w.Append(ctx, rev, big)
	require.ErrorIs(t, err, sessionstore.ErrTooLarge)
	require.True(t, blobExists(t, st, "gc", refused))
	// A crash after a blob was renamed into place, and one while it was
	// being written.
	dir := filepath.Join(st.Dir(), "gc", BlobDir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, hashOf(crashed)), crashed, 0o600))
	tmp := filepath.Join(dir, blobfile.TmpPrefix+"0123456789abcdef"+layout.TmpSuffix)
	require.NoError(t, os.WriteFile(tmp, []byte("torn"), 0o600))
	// Files that are not the store's are left alone.
	other := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(other, []byte("mine"), 0o600))

	rep, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 1})
	require.NoError(t, err)
	require.Positive(t, rep.RevisionsTrimmed)
	require.Equal(t, 2, rep.Blobs.Blobs, "the refused and the crashed blob")
	require.Equal(t, 1, rep.Blobs.Temporary)
	require.Equal(t, int64(len(refused)+len(crashed)), rep.Blobs.Bytes)
	require.True(t, blobExists(t, st, "gc", kept), "an archived revision references it")
	require.False(t, blobExists(t, st, "gc", refused))
	require.False(t, blobExists(t, st, "gc", crashed))
	require.NoFileExists(t, tmp)
	require.FileExists(t, other)
	require.NoError(t, os.Remove(other))

	rec, err := st.LoadRevision(ctx, "gc", 2)
	require.NoError(t, err, "the archived revision loads with its content")
	require.Equal(t, kept, rec.Snapshot.Messages[0].Parts[1].Data)

	// The holder attaches the refused image again: it is stored again.
	appendMsg(imageMessage(refused))
	require.True(t, blobExists(t, st, "gc", refused))
	require.NoError(t, w.Release(ctx))
	rec, err = st.Load(ctx, "gc")
	require.NoError(t, err)
	require.Equal(t, refused, rec.Snapshot.Messages[len(rec.Snapshot.Messages)-1].Parts[1].Data)

	// Nothing unreferenced: a compaction with nothing to trim, and one
	// that trims, remove nothing.
	rep, err = st.Compact(ctx, "gc", maintenance.CompactPolicy{KeepLast: 1}, 0)
	require.NoError(t, err)
	require.Zero(t, rep.Blobs)
}

// TestRepairCollectsBlobsButKeepsForensicOnes: repair removes blobs no
// record references once the log is sound, but keeps one that only the
// revisions it set aside (now in a forensic copy) reference.
func TestRepairCollectsBlobsButKeepsForensicOnes(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // the test damages it
	aside, crashed := randomImage(4, 64<<10), randomImage(5, 64<<10)
	s := sessiontest.New("rp")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rev := uint64(1)
	appendSnap := func() {
		_, err := w.Append(ctx, rev, sessiontest.Snap(t, s))
		require.NoError(t, err)
		rev++
	}
	for range 3 {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "hello", sessiontest.Epoch)))
		appendSnap()
	}
	require.NoError(t, s.AppendMessage(imageMessage(aside))) // revision 5
	appendSnap()
	s = sessiontest.New("rp") // revision 6 rewrites the conversation: a full record
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "again", sessiontest.Epoch)))
	appendSnap()
	require.NoError(t, w.Release(ctx))
	dir := filepath.Join(st.Dir(), "rp", BlobDir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, hashOf(crashed)), crashed, 0o600))

	// Damage revision 5, the only one that references the image.
	path := filepath.Join(st.Dir(), "rp", LogFile)
	lines, offs := salvageLines(t, path)
	require.Len(t, lines, 6)
	require.Contains(t, string(lines[4]), hashOf(aside))
	toolFlip(t, path, offs[4]+int64(len(lines[4])-20))
	rep, err := st.Repair(ctx, "rp", maintenance.RepairOptions{Salvage: true})
	require.NoError(t, err)
	require.NotNil(t, rep.Salvaged)
	require.Equal(t, 1, rep.Blobs.Blobs, "the crashed blob")
	require.False(t, blobExists(t, st, "rp", crashed))
	require.True(t, blobExists(t, st, "rp", aside), "the forensic copy of revision 5 references it")
	rec, err := st.Load(ctx, "rp")
	require.NoError(t, err)
	require.Equal(t, "again", rec.Snapshot.Messages[0].Parts[0].Text)
}

// TestBlobTempSweptAtAcquire: a temporary blob file a dead writer left is
// swept when the next holder takes the lease.
func TestBlobTempSweptAtAcquire(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, _ := blobSession(t, st, "tmp", 2, func(i int) string { return strings.Repeat("z", 20<<10+i) }, nil)
	require.NoError(t, w.Release(ctx))
	tmp := filepath.Join(st.Dir(), "tmp", BlobDir, blobfile.TmpPrefix+"fedcba9876543210"+layout.TmpSuffix)
	require.NoError(t, os.WriteFile(tmp, []byte("torn"), 0o600))
	w, err := st.Acquire(ctx, "tmp", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Contains(t, w.Recovery().Swept, "tmp/"+BlobDir+"/"+filepath.Base(tmp))
	require.NoFileExists(t, tmp)
	require.NoError(t, w.Release(ctx))
}
