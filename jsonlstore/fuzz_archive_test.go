package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// The archive reader under hostile input: a session compacted from the
// committed "clean" fixture gets an arbitrary manifest and an arbitrary
// segment file. Whatever they hold, reading never panics, every error is a
// *CorruptionError, no revision is returned that was not written, the
// latest revision (in the log) still loads, and memory stays bounded: a
// zstd bomb or a manifest promising terabytes makes no reader allocate
// more than the decoder's cap plus a few records.

// archiveAllocBound bounds what one pass of readers (history, one archived
// revision, verify) may allocate in total over a hostile archive.
const archiveAllocBound = 3*archive.DecoderMemory + 64*fuzzMaxRecord

// archivedFixture is a session compacted from the clean fixture: its log
// (revisions 4 and 5), manifest, segment (revisions 1 to 3) and the
// payload of every revision.
type archivedFixture struct {
	id       session.SessionID
	log      []byte
	manifest []byte
	segName  string
	segment  []byte
	want     map[uint64][]byte
}

func compactedFixture(tb testing.TB) archivedFixture {
	tb.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(fixtureRoot, "clean", LogFile))
	require.NoError(tb, err)
	root := tb.TempDir()
	require.NoError(tb, os.Mkdir(filepath.Join(root, "clean"), 0o700))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "clean", LogFile), data, 0o600))
	st, err := Open(root, Options{MaxRecordBytes: fuzzMaxRecord})
	require.NoError(tb, err)
	defer st.Close()
	_, err = st.Compact(ctx, "clean", maintenance.CompactPolicy{KeepLast: 2}, 0)
	require.NoError(tb, err)

	a := archivedFixture{id: "clean", want: map[uint64][]byte{}}
	recs, _ := validLines(data, fuzzMaxRecord)
	for _, r := range recs {
		a.want[r.Rev] = r.Payload
	}
	a.log, err = os.ReadFile(filepath.Join(root, "clean", LogFile))
	require.NoError(tb, err)
	dir := filepath.Join(root, "clean", ArchiveDir)
	a.manifest, err = os.ReadFile(filepath.Join(dir, archive.ManifestFile))
	require.NoError(tb, err)
	var m archive.Manifest
	require.True(tb, layout.UnframeJSON(a.manifest, &m))
	require.Len(tb, m.Segments, 1)
	a.segName = m.Segments[0].File
	a.segment, err = os.ReadFile(filepath.Join(dir, a.segName))
	require.NoError(tb, err)
	return a
}

// zstdBombs returns two segments of 256 MiB each compressed to a few
// KiB: one endless line, and empty lines.

var zstdBombs = sync.OnceValues(func() (line, newlines []byte) { return zstdBombsOf(256 << 20) })

// zstdBombsOf is zstdBombs for n bytes.
func zstdBombsOf(n int) (line, newlines []byte) {
	enc, err := zstd.NewWriter(nil, archive.EncoderOptions()...)
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	return enc.EncodeAll(bytes.Repeat([]byte("a"), n), nil), enc.EncodeAll(bytes.Repeat([]byte("\n"), n), nil)
}

// bombManifest is a valid manifest for segment 1-3 that promises bytes
// uncompressed bytes.
func bombManifest(tb testing.TB, bytes int64) []byte {
	b, err := record.Frame(archive.Manifest{Version: archive.ManifestVersion, Segments: []archive.Segment{{
		File: archive.SegmentName(1, 3), First: 1, Last: 3, Records: 3, Bytes: bytes, ZstBytes: 1, CRC: "00000000",
	}}})
	require.NoError(tb, err)
	return b
}

// archiveSeeds are the fuzzer's seeds and the fixed cases of
// TestArchiveHostile: the intact archive, damaged copies, and bombs. The
// fuzzer gets 1 MiB bombs (coverage instrumentation makes decompressing
// 256 MiB take seconds per run); the test gets 256 MiB ones.
func archiveSeeds(tb testing.TB, a archivedFixture, bigBombs bool) (names []string, manifests, segments [][]byte) {
	add := func(name string, m, s []byte) {
		names, manifests, segments = append(names, name), append(manifests, m), append(segments, s)
	}
	flip := func(b []byte, at int) []byte { c := bytes.Clone(b); c[at%len(c)] ^= 0x10; return c }
	add("intact", a.manifest, a.segment)
	add("segment missing", a.manifest, nil)
	add("segment truncated", a.manifest, a.segment[:len(a.segment)/2])
	add("segment bit flip", a.manifest, flip(a.segment, len(a.segment)/2))
	add("segment header flip", a.manifest, flip(a.segment, 5))
	add("manifest bit flip", flip(a.manifest, len(a.manifest)/2), a.segment)
	add("manifest empty", []byte{}, a.segment)
	add("manifest not json", []byte("\x00\x00garbage"), a.segment)
	add("segment not zstd", a.manifest, []byte("plain text\n"))
	// One endless line, and empty lines, each a few KiB compressed,
	// behind a manifest that promises a terabyte.
	line, newlines := zstdBombsOf(1 << 20)
	if bigBombs {
		line, newlines = zstdBombs()
		// A manifest beyond its 16 MiB cap is refused unread.
		huge := append(bytes.Repeat([]byte(" "), archive.MaxManifestSize), a.manifest...)
		add("manifest over its cap", huge, a.segment)
	}
	add("bomb one line", bombManifest(tb, 1<<40), line)
	add("bomb newlines", bombManifest(tb, 1<<40), newlines)
	// A frame header that declares a 1 TiB window and content size.
	add("frame claims huge window", a.manifest, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	return names, manifests, segments
}

func FuzzArchive(f *testing.F) {
	a := compactedFixture(f)
	_, ms, ss := archiveSeeds(f, a, false)
	for i := range ms {
		f.Add(ms[i], ss[i])
	}
	f.Fuzz(func(t *testing.T, manifestBytes, segment []byte) {
		checkArchive(t, a, manifestBytes, segment)
	})
}

func TestArchiveHostile(t *testing.T) {
	a := compactedFixture(t)
	names, ms, ss := archiveSeeds(t, a, true)
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			ok := checkArchive(t, a, ms[i], ss[i])
			require.Equal(t, name == "intact", ok, "only the intact archive reads back whole")
		})
	}
}

// checkArchive plants manifestBytes and segment (nil: no segment file) in
// a copy of a and reads it; it reports whether the whole history read
// back.
func checkArchive(t *testing.T, a archivedFixture, manifestBytes, segment []byte) (whole bool) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, string(a.id))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ArchiveDir), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, LogFile), a.log, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ArchiveDir, archive.ManifestFile), manifestBytes, 0o600))
	if segment != nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ArchiveDir, a.segName), segment, 0o600))
	}
	st, err := Open(root, Options{MaxRecordBytes: fuzzMaxRecord})
	require.NoError(t, err)
	defer st.Close()
	clearErr := func(what string, err error) {
		t.Helper()
		var ce *sessionstore.CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: unclear error %T: %v", what, err, err)
		}
	}

	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	next := uint64(1)
	var herr error
	for rec, err := range st.History(ctx, a.id) {
		if err != nil {
			herr = err
			break
		}
		require.Equal(t, next, rec.Revision, "history is in order without gaps")
		require.JSONEq(t, string(a.want[rec.Revision]), encodeRec(t, rec), "revision %d was never written so", rec.Revision)
		next++
	}
	if herr != nil {
		clearErr("history", herr)
	} else {
		require.Equal(t, uint64(len(a.want)+1), next)
	}
	if rec, err := st.LoadRevision(ctx, a.id, 2); err == nil {
		require.JSONEq(t, string(a.want[2]), encodeRec(t, rec))
	} else {
		clearErr("load revision 2", err)
	}
	rep, err := st.Verify(ctx, a.id)
	require.NoError(t, err, "verify reports damage, it does not fail on it")
	require.Equal(t, herr == nil, rep.OK(), "verify agrees with history: %v", herr)

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(archiveAllocBound), "readers allocated beyond the cap")

	// The log does not depend on the archive: the latest revision loads.
	latest, err := st.Load(ctx, a.id)
	require.NoError(t, err)
	require.Equal(t, uint64(len(a.want)), latest.Revision)
	require.Equal(t, a.log, slices.Clone(mustRead(t, filepath.Join(dir, LogFile))), "readers never modify the log")
	return herr == nil
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}
