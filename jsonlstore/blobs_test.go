package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// blobSession grows a session by n messages, message i holding text(i)
// (and, when image(i) is not nil, an image), appending one revision per
// message; it returns the writer and the session.
func blobSession(t *testing.T, st *Store, id session.SessionID, n int, text func(int) string, image func(int) []byte) (sessionstore.Writer, *session.Session) {
	t.Helper()
	ctx := context.Background()
	s := sessiontest.New(string(id))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for i := range n {
		m := session.TextMessage(session.RoleUser, text(i), sessiontest.Epoch)
		if image != nil {
			if img := image(i); img != nil {
				m.Parts = append(m.Parts, session.Part{Type: session.PartImage, MediaType: "image/png", Data: img})
			}
		}
		require.NoError(t, s.AppendMessage(m))
		_, err := w.Append(ctx, uint64(i+1), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	return w, s
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, err := d.Info()
			if err == nil {
				n += fi.Size()
			}
			return err
		}
		return err
	}))
	return n
}

// TestBlobsStoredOnce: a session that attaches the same 1 MiB image 20
// times and reads the same 64 KiB file 20 times holds each once, the log
// stays small, and every revision loads back exactly as appended.
func TestBlobsStoredOnce(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	r := rand.New(rand.NewPCG(1, 2))
	img := make([]byte, 1<<20)
	for i := range img {
		img[i] = byte(r.Uint32()) // incompressible: stored as is
	}
	file := strings.Repeat("line of a source file\n", 64<<10/22)
	w, s := blobSession(t, st, "once", 40, func(i int) string {
		if i%2 == 0 {
			return file
		}
		return fmt.Sprintf("look at this (%d)", i)
	}, func(i int) []byte {
		if i%2 == 1 {
			return img
		}
		return nil
	})
	require.NoError(t, w.Release(ctx))

	names, err := blobfile.Names(st.fs, "once")
	require.NoError(t, err)
	require.Len(t, names, 2, "the image and the file, once each: %v", names)
	logInfo, err := os.Stat(filepath.Join(st.Dir(), "once", LogFile))
	require.NoError(t, err)
	unique := int64(len(img) + len(file))
	onDisk := dirBytes(t, filepath.Join(st.Dir(), "once"))
	require.LessOrEqual(t, onDisk, unique*12/10+logInfo.Size(), "bytes on disk within 1.2× the unique content plus the log")
	require.Less(t, logInfo.Size(), int64(256<<10), "the log holds references, not the content")

	rec, err := st.Load(ctx, "once")
	require.NoError(t, err)
	want, err := sessnap.Encode(s)
	require.NoError(t, err)
	got, err := sessnap.Marshal(rec.Snapshot)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the latest revision, content and all")
	n := 0
	for rec, err := range st.History(ctx, "once") {
		require.NoError(t, err)
		require.Len(t, rec.Snapshot.Messages, int(rec.Revision)-1)
		if rec.Revision > 2 {
			require.Equal(t, file, rec.Snapshot.Messages[0].Parts[0].Text)
		}
		n++
	}
	require.Equal(t, 41, n)
	vr, err := st.Verify(ctx, "once")
	require.NoError(t, err)
	require.True(t, vr.OK(), "%+v", vr)
	vr, err = st.VerifyWith(ctx, sessionstore.VerifyOptions{Deep: true}, "once")
	require.NoError(t, err)
	require.True(t, vr.OK(), "%+v", vr)
}

// TestSessionAboveTheCap: a session grows past the record cap (16 MiB of
// text here, with a 1 MiB cap) and every append goes on working: the cap
// bounds a record, not a session.
func TestSessionAboveTheCap(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := Open(root, Options{MaxRecordBytes: 1 << 20})
	require.NoError(t, err)
	defer st.Close()
	w, s := blobSession(t, st, "big", 80, func(i int) string {
		return strings.Repeat(fmt.Sprintf("%d ", i), 256<<10/3)
	}, nil)
	require.NoError(t, w.Release(ctx))
	var total int
	for _, m := range s.Conversation() {
		total += len(m.Parts[0].Text)
	}
	require.Greater(t, total, 16<<20)
	rec, err := st.Load(ctx, "big")
	require.NoError(t, err)
	require.Len(t, rec.Snapshot.Messages, 80)
	require.Equal(t, s.Conversation()[79].Parts[0].Text, rec.Snapshot.Messages[79].Parts[0].Text)
}

// TestBlobDamageIsCorruption: a blob that is missing or does not hold
// what its reference says is corruption naming the blob file, for loads
// and for verify; nothing is removed.
func TestBlobDamageIsCorruption(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []string{"flipped", "missing", "truncated"} {
		t.Run(damage, func(t *testing.T) {
			st := openUncheckedStore(t) // the test damages it
			w, _ := blobSession(t, st, "dmg", 3, func(i int) string { return strings.Repeat(fmt.Sprint(i), 40<<10) }, nil)
			require.NoError(t, w.Release(ctx))
			names, err := blobfile.Names(st.fs, "dmg")
			require.NoError(t, err)
			require.NotEmpty(t, names)
			path := filepath.Join(st.Dir(), "dmg", BlobDir, names[0])
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			switch damage {
			case "flipped":
				data[len(data)/2] ^= 1
				require.NoError(t, os.WriteFile(path, data, 0o600))
			case "missing":
				require.NoError(t, os.Remove(path))
			case "truncated":
				require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o600))
			}
			for rev := uint64(1); rev <= 4; rev++ {
				_, err = st.LoadRevision(ctx, "dmg", rev)
				if err != nil {
					break
				}
			}
			var ce *sessionstore.CorruptionError
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, ErrBlob)
			require.Equal(t, "dmg/"+LogFile, ce.Path, "located at the record that references the blob")
			require.Positive(t, ce.Offset)
			require.Contains(t, ce.Error(), "dmg/"+BlobDir+"/", "and naming the blob")
			vr, err := st.Verify(ctx, "dmg")
			require.NoError(t, err)
			require.False(t, vr.OK())
			require.Contains(t, vr.Sessions[0].Problems[0].Message, BlobDir)

			// A load without the content does not read the blob.
			light, err := st.LoadWith(ctx, "dmg", sessionstore.LoadOptions{WithoutContent: true})
			require.NoError(t, err)
			require.NotNil(t, light.Snapshot.Messages[2].Parts[0].Ref)
			_, err = light.Session()
			require.NoError(t, err, "a snapshot without its content restores")
		})
	}
}

// blobAck is what the blob workload has been told is done: the last
// acknowledged revision, and whether the imported session's creation
// returned.
type blobAck struct {
	acked    uint64
	imported bool
}

const (
	blPowerID = session.SessionID("pl-blobs")
	// blImportID is created with its whole history at once, released
	// (CreateHistoryReleased, as an import creates sessions): its blobs
	// are written in its temporary directory and synced together before
	// it is published.
	blImportID = session.SessionID("pl-import")
	blImportN  = 6
)

// blobImportHistory is blImportID's history: each revision adds a
// message whose text goes out of line (the same content twice in it).
func blobImportHistory(t testing.TB) []sessnap.Snapshot {
	s := sessiontest.New(string(blImportID))
	var out []sessnap.Snapshot
	for rev := uint64(1); rev <= blImportN; rev++ {
		if rev > 1 {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, blobPowerText(rev+100), sessiontest.Epoch)))
		}
		out = append(out, sessiontest.Snap(t, s))
	}
	return out
}

// blobPowerText is the text revision rev appends: out of line (above the
// threshold), every third revision the same content again.
func blobPowerText(rev uint64) string {
	if rev%3 == 0 {
		return strings.Repeat("same content ", 3000)
	}
	return strings.Repeat(fmt.Sprintf("rev %d ", rev), 3000)
}

// blobPowerWorkload creates a session and appends 8 revisions whose text
// goes out of line, on a Recorder (mutate as crashtest.Start takes it).
func blobPowerWorkload(t testing.TB, mutate int) *crashtest.Recorder[blobAck] {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[blobAck](mutate)
	defer rec.Stop()
	st := crashStore(t, rec, fltRoot)
	s := sessiontest.New(string(blPowerID))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec.Ack.acked = 1
	for rev := uint64(1); rev <= 8; rev++ {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, blobPowerText(rev), sessiontest.Epoch)))
		_, err := w.Append(ctx, rev, sessiontest.Snap(t, s))
		require.NoError(t, err)
		rec.Ack.acked = rev + 1
	}
	require.NoError(t, w.Release(ctx))
	created, err := st.CreateHistoryReleased(ctx, snapsOf(blobImportHistory(t)), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.True(t, created)
	rec.Ack.imported = true
	rec.Mark("end of workload")
	return rec
}

// blobPowerCheck: every acknowledged revision loads with its content, and
// the cap it was written with is recorded.
func blobPowerCheck(crashed *vfs.Sim, p crashtest.Point[blobAck], _ crashtest.Crash, _ *rand.Rand) error {
	ctx := context.Background()
	st := newStore(fltRoot, nil, crashed, newSimLeaser(crashed, fltRoot), Options{})
	defer st.Close()
	if got, err := layout.RecordedCap(crashed, layout.SessionDir(blPowerID)); p.Ack.acked > 0 && (err != nil || got < sessionstore.DefaultMaxRecordBytes) {
		return crashtest.Violate("record-cap", "settings.json records cap %d (%v)", got, err)
	}
	if p.Ack.imported {
		if got, err := layout.RecordedCap(crashed, layout.SessionDir(blImportID)); err != nil || got < sessionstore.DefaultMaxRecordBytes {
			return crashtest.Violate("record-cap", "%s: settings.json records cap %d (%v)", blImportID, got, err)
		}
		for rev := uint64(1); rev <= blImportN; rev++ {
			rec, err := st.LoadRevision(ctx, blImportID, rev)
			if err != nil {
				return crashtest.Violate("created-revision", "%s revision %d: %w", blImportID, rev, err)
			}
			if n := len(rec.Snapshot.Messages); n != int(rev)-1 || n > 0 && rec.Snapshot.Messages[n-1].Parts[0].Text != blobPowerText(rev+100) {
				return crashtest.Violate("content", "%s revision %d: not the content created", blImportID, rev)
			}
		}
	}
	for rev := uint64(1); rev <= p.Ack.acked; rev++ {
		rec, err := st.LoadRevision(ctx, blPowerID, rev)
		if err != nil {
			return crashtest.Violate("acknowledged-revision", "revision %d: %w", rev, err)
		}
		if len(rec.Snapshot.Messages) != int(rev)-1 {
			return crashtest.Violate("acknowledged-revision", "revision %d holds %d messages", rev, len(rec.Snapshot.Messages))
		}
		if rev > 1 && rec.Snapshot.Messages[rev-2].Parts[0].Text != blobPowerText(rev-1) {
			return crashtest.Violate("content", "revision %d: the content of message %d is not what was appended", rev, rev-2)
		}
	}
	return nil
}

// TestBlobsSurvivePowerLoss: with the unkind power-loss model (any subset
// of unsynced writes and directory operations survives), a crash at any
// sync point of appends that write blobs never loses an acknowledged
// revision or its content: a blob is synced, under its name, before the
// record that references it.
func TestBlobsSurvivePowerLoss(t *testing.T) {
	run := blobPowerWorkload(t, -1)
	points := run.Points()
	require.Greater(t, len(points), 10)
	crashtest.Sweep(t, points, 8, blobPowerCheck)
}

// TestBlobSyncMutation silences each sync call of the blob workload in
// turn (blob file, blobs/ and session directory, log): some crash must
// then lose an acknowledged revision or its content (see
// TestSyncMutation). The catalog's syncs are its own tests' (catalogSync).
func TestBlobSyncMutation(t *testing.T) {
	base := blobPowerWorkload(t, -1)
	var ks []int
	for k, name := range base.Syncs() {
		if !catalogSync(name) {
			ks = append(ks, k)
		}
	}
	seeds := mutQuickSeeds
	if os.Getenv(mutEnv) == "1" {
		seeds = mutFullSeeds
	}
	crashtest.Mutate(t, base, ks, seeds, 0, func(t *testing.T, k int) (*crashtest.Recorder[blobAck], crashtest.Check[blobAck]) {
		return blobPowerWorkload(t, k), blobPowerCheck
	})
}

// TestBackupCopiesBlobs: a backup of a session with blobs is whole: the
// copy verifies and loads the content.
func TestBackupCopiesBlobs(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, s := blobSession(t, st, "bk", 5, func(i int) string { return strings.Repeat(fmt.Sprint(i), 30<<10) }, nil)
	require.NoError(t, w.Release(ctx))
	dest := filepath.Join(t.TempDir(), "copy")
	rep, err := st.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Equal(t, 5, rep.Sessions[0].Blobs)
	cp, err := Open(dest, Options{})
	require.NoError(t, err)
	defer cp.Close()
	rec, err := cp.Load(ctx, "bk")
	require.NoError(t, err)
	require.Equal(t, s.Conversation()[4].Parts[0].Text, rec.Snapshot.Messages[4].Parts[0].Text)
}
