package jsonlstore

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// The format 4 fixtures are session directories — log.jsonl,
// settings.json and blobs/ — written by the store itself with a fixed
// clock, then damaged by hand where the name says so:
//
//   - v4-blobs: a text and a tool output kept out of line compressed, an
//     image kept as is, the image attached twice (stored once);
//   - v4-pages: a conversation many times its record cap (16 KiB, recorded
//     in settings.json) whose full records keep older messages in pages;
//   - v4-blob-missing, v4-blob-damaged: v4-blobs with the image's blob
//     removed, or one byte of it changed: corruption at the record that
//     references it;
//   - v4-blob-torn: v4-blobs after a crash that left a temporary blob file
//     and a whole blob no record references: sound; a repair removes both.
var format4Fixtures = map[string]bool{"v4-blobs": true, "v4-pages": true, "v4-blob-missing": true, "v4-blob-damaged": true, "v4-blob-torn": true}

// fixtureImage is the image of the v4 fixtures: incompressible, 20 KiB.
func fixtureImage() []byte {
	r := rand.New(rand.NewPCG(4, 4))
	b := make([]byte, 20<<10)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeFormat4Fixture writes fixture name's session directory under root
// (its log, settings and blobs: what the fixture holds).
func writeFormat4Fixture(t testing.TB, root, name string) {
	t.Helper()
	ctx := context.Background()
	tick := sessiontest.Epoch
	opts := Options{Now: func() time.Time { tick = tick.Add(time.Second); return tick }}
	base := name
	if name != "v4-pages" {
		base = "v4-blobs"
	}
	if base == "v4-pages" {
		opts.MaxRecordBytes = 16 << 10
	}
	st, err := Open(root, opts)
	require.NoError(t, err)
	defer st.Close()
	id := session.SessionID(name)
	s := sessiontest.New(string(id))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rev := w.Revision()
	add := func(m session.Message) {
		require.NoError(t, s.AppendMessage(m))
		rev, err = w.Append(ctx, rev, sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	at := sessiontest.Epoch
	if base == "v4-pages" {
		for i := range 24 {
			add(session.TextMessage(session.RoleUser, fmt.Sprintf("message %d: %s", i, strings.Repeat("words of a message ", 60+i*5)), at))
		}
	} else {
		img := fixtureImage()
		add(session.TextMessage(session.RoleUser, "Here is the screenshot and the log.", at))
		m := session.Message{Role: session.RoleUser, CreatedAt: at, Parts: []session.Part{{Type: session.PartImage, MediaType: "image/png", Data: img}}}
		add(m)
		add(session.Message{Role: session.RoleAssistant, CreatedAt: at, Parts: []session.Part{{Type: session.PartToolCall, ToolCallID: "c1", Name: "read_log", Input: []byte(`{"path":"build.log"}`)}}})
		add(session.Message{Role: session.RoleTool, CreatedAt: at, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c1",
			Output: strings.Repeat("ok: compiled package\n", 1200)}}})
		add(session.TextMessage(session.RoleAssistant, strings.Repeat("The build is clean. ", 1000), at))
		add(m) // the same image again: stored once
	}
	require.NoError(t, w.Release(ctx))

	dir := filepath.Join(root, name)
	blobs := filepath.Join(dir, BlobDir)
	names, err := blobfile.Names(st.fs, id)
	require.NoError(t, err)
	image := ""
	for _, n := range names {
		if !strings.HasSuffix(n, blobfile.ZstSuffix) {
			image = n
		}
	}
	switch name {
	case "v4-blob-missing":
		require.NoError(t, os.Remove(filepath.Join(blobs, image)))
	case "v4-blob-damaged":
		b, err := os.ReadFile(filepath.Join(blobs, image))
		require.NoError(t, err)
		b[100] ^= 0x20
		require.NoError(t, os.WriteFile(filepath.Join(blobs, image), b, 0o600))
	case "v4-blob-torn":
		require.NoError(t, os.WriteFile(filepath.Join(blobs, blobfile.TmpPrefix+"0123456789abcdef"+layout.TmpSuffix), []byte("half a bl"), 0o600))
		orphan := []byte("a blob whose record was never written")
		require.NoError(t, os.WriteFile(filepath.Join(blobs, hashOf(orphan)), orphan, 0o600))
	}
	// Only what the fixture holds.
	for _, leftover := range []string{"lease.lock", "lease.json", SummaryFile} {
		require.NoError(t, os.Remove(filepath.Join(dir, leftover)))
	}
}

// fixtureFiles returns the files of session directory dir by relative
// name, with their content (blobs decompressed: what the fixture means,
// whatever the compressor's exact bytes).
func fixtureFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, BlobDir+"/") && strings.HasSuffix(rel, blobfile.ZstSuffix) {
			content, _, err := blobfile.ReadIn(osDirFS(t, filepath.Dir(path)), "", strings.TrimSuffix(d.Name(), blobfile.ZstSuffix), blobfile.SizeAny, blobfile.HintZst)
			if err != nil {
				return err
			}
			b = content
		}
		if rel == LogFile {
			// The fixtures were written under snapshot schema 3; a writer
			// of a later schema writes the same records but for the
			// schema it names and the checksum over it.
			b = schemaAndCRC.ReplaceAll(b, []byte(`"schema":S,$1"crc":"C"`))
		}
		out[rel] = string(b)
		return nil
	}))
	return out
}

// schemaAndCRC finds a log line's schema field, what follows it, and its
// checksum.
var schemaAndCRC = regexp.MustCompile(`"schema":[0-9]+,(.*)"crc":"[0-9a-f]{8}"`)

// osDirFS is the real directory dir as a vfs.FS, closed at cleanup.
func osDirFS(t testing.TB, dir string) vfs.FS {
	t.Helper()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return vfs.OS(root)
}

// copyFixture copies fixture name into a fresh root and returns the root.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(root, name), os.DirFS(filepath.Join(fixtureRoot, name))))
	return root
}

// TestFormat4Fixtures: sessions whose records reference blobs and pages
// read back whole; a referenced blob that is missing or damaged is
// corruption at the record that references it; torn blobs are harmless
// and a repair removes them.
func TestFormat4Fixtures(t *testing.T) {
	ctx := context.Background()
	for name := range format4Fixtures {
		t.Run(name, func(t *testing.T) {
			fixture := filepath.Join(fixtureRoot, name)
			if *update {
				if _, err := os.Stat(fixture); err != nil {
					tmp := t.TempDir()
					writeFormat4Fixture(t, tmp, name)
					require.NoError(t, os.CopyFS(fixture, os.DirFS(filepath.Join(tmp, name))))
				}
			}
			// The generator still writes what is committed (fixtures are
			// frozen: a change of the format adds new ones).
			gen := t.TempDir()
			writeFormat4Fixture(t, gen, name)
			require.Equal(t, fixtureFiles(t, filepath.Join(gen, name)), fixtureFiles(t, fixture),
				"the generator no longer produces the committed fixture; fixtures are frozen: add a new one")

			root := copyFixture(t, name)
			st, err := Open(root, Options{}) // the default cap: v4-pages records its own
			require.NoError(t, err)
			defer st.Close()
			id := session.SessionID(name)
			vr, err := st.Verify(ctx, id)
			require.NoError(t, err)
			switch name {
			case "v4-blob-missing", "v4-blob-damaged":
				_, err := st.Load(ctx, id)
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
				require.ErrorIs(t, err, ErrBlob)
				require.Equal(t, name+"/"+LogFile, ce.Path)
				require.Equal(t, uint64(7), ce.Revision, "the latest record, which references the image")
				require.False(t, vr.OK())
				p := vr.Sessions[0].Problems[0]
				require.Equal(t, uint64(3), p.Revision, "verify: the record that first references the image")
				require.Contains(t, p.Message, BlobDir+"/")
				return
			}
			require.True(t, vr.OK(), "%+v", vr)
			rec, err := st.Load(ctx, id)
			require.NoError(t, err)
			msgs := rec.Snapshot.Messages
			if name == "v4-pages" {
				require.Len(t, msgs, 24)
				require.True(t, strings.HasPrefix(msgs[23].Parts[0].Text, "message 23: "))
			} else {
				require.Len(t, msgs, 6)
				require.Equal(t, fixtureImage(), msgs[1].Parts[0].Data)
				require.Equal(t, msgs[1].Parts[0].Data, msgs[5].Parts[0].Data)
				require.Equal(t, strings.Repeat("ok: compiled package\n", 1200), msgs[3].Parts[0].Output)
			}
			n := 0
			for rec, err := range st.History(ctx, id) {
				require.NoError(t, err)
				require.Len(t, rec.Snapshot.Messages, n, "revision %d", rec.Revision)
				n++
			}
			require.Equal(t, len(msgs)+1, n)

			if name == "v4-blob-torn" {
				rep, err := st.Repair(ctx, id, maintenance.RepairOptions{})
				require.NoError(t, err)
				require.Contains(t, rep.Recovery.Swept, name+"/"+BlobDir+"/"+blobfile.TmpPrefix+"0123456789abcdef"+layout.TmpSuffix, "the repair's takeover sweeps the temporary file")
				require.Equal(t, maintenance.BlobCollection{Blobs: 1, Bytes: int64(len("a blob whose record was never written"))}, rep.Blobs)
				entries, err := os.ReadDir(filepath.Join(root, name, BlobDir))
				require.NoError(t, err)
				require.Len(t, entries, 3, "the blobs the records reference")
			}
			// A holder goes on from it.
			w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
			require.NoError(t, err)
			snap := rec.Snapshot
			snap.Messages = append(slices.Clip(snap.Messages), session.TextMessage(session.RoleUser, "and one more", sessiontest.Epoch))
			_, err = w.Append(ctx, rec.Revision, snap)
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
			vr, err = st.Verify(ctx, id)
			require.NoError(t, err)
			require.True(t, vr.OK(), "%+v", vr)
		})
	}
}
