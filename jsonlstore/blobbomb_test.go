package jsonlstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// claimSizes rewrites the log in dir so that each reference to content or
// a page of hash h, of size n, claims claim(h, n) bytes, every record framed again as a
// hostile file would have it: each revision's snapshot rebuilt, rewritten,
// and written as the record was (a full record, or a delta from the
// rewritten revision before, its sizes and checksum those of the
// rewritten snapshots).
func claimSizes(t *testing.T, dir string, hashes []string, claim func(hash string, size int64) int64) {
	t.Helper()
	path := filepath.Join(dir, LogFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	changed := 0
	rewrite := func(snap []byte) []byte {
		for _, h := range hashes {
			ref := regexp.MustCompile(`"sha256":"` + h + `",("messages":[0-9]+,)?"size":([0-9]+)`)
			snap = ref.ReplaceAllFunc(snap, func(m []byte) []byte {
				changed++
				size, err := strconv.ParseInt(string(ref.FindSubmatch(m)[2]), 10, 64)
				require.NoError(t, err)
				return fmt.Appendf(nil, `%s"size":%d`, m[:bytes.LastIndex(m, []byte(`"size":`))], claim(h, size))
			})
		}
		return snap
	}
	var out, prev, prevNew []byte
	for _, line := range bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		r, err := parseLine(bytes.TrimSuffix(line, []byte("\n")), MaxReadRecordBytes)
		require.NoError(t, err)
		snap := r.Payload
		if r.Kind == record.KindDelta {
			snap, err = record.Apply(prev, r.Payload, MaxReadRecordBytes)
			require.NoError(t, err)
		}
		snapNew := rewrite(bytes.Clone(snap))
		payload := snapNew
		if r.Kind == record.KindDelta {
			var ok bool
			payload, ok = record.Diff(prevNew, snapNew)
			require.True(t, ok, "a delta between the rewritten revisions")
		}
		out = append(out, record.Encode(r.Meta, payload)...)
		prev, prevNew = snap, snapNew
	}
	require.Positive(t, changed, "no reference rewritten")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	require.NoError(t, os.Remove(filepath.Join(dir, SummaryFile))) // a cache of the log as it was
}

// bombSession writes session id: a message with an incompressible image
// (a raw blob), one with a compressible text (a compressed blob), and
// inline text after them until the conversation
// outgrows the store's record cap: the last record is a full record that
// keeps the older messages in pages (compressed). It returns the hashes
// of the image, the text and the pages.
func bombSession(t *testing.T, st *Store, id session.SessionID) (image, text string, pages []string) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 25))
	img := make([]byte, 64<<10)
	for i := range img {
		img[i] = byte(r.Uint32())
	}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	prose := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	bigText := prose(64 << 10)
	s := sessiontest.New(string(id))
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	withImage := session.TextMessage(session.RoleUser, "look at this", sessiontest.Epoch)
	withImage.Parts = append(withImage.Parts, session.Part{Type: session.PartImage, MediaType: "image/png", Data: img})
	withText := session.TextMessage(session.RoleUser, bigText, sessiontest.Epoch)
	logPath := filepath.Join(st.Dir(), string(id), LogFile)
	lastIsPaged := func() bool {
		data, err := os.ReadFile(logPath)
		require.NoError(t, err)
		lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		rec, err := parseLine(lines[len(lines)-1], MaxReadRecordBytes)
		require.NoError(t, err)
		return rec.Kind == record.KindFull && record.MayHavePages(rec.Payload)
	}
	for i := 0; i < 2 || !lastIsPaged(); i++ {
		require.Less(t, i, 1000, "no full record with pages")
		m := session.TextMessage(session.RoleAssistant, "needle "+prose(12<<10), sessiontest.Epoch)
		switch i {
		case 0:
			m = withImage
		case 1:
			m = withText
		}
		require.NoError(t, s.AppendMessage(m))
		_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	image, text = blob.Hash(img), blob.Hash([]byte(bigText))
	names, err := blobfile.Names(st.fs, id)
	require.NoError(t, err)
	for _, n := range names {
		if h := strings.TrimSuffix(n, blobfile.ZstSuffix); h != image && h != text {
			require.True(t, strings.HasSuffix(n, blobfile.ZstSuffix), "a page is stored compressed: %s", n)
			pages = append(pages, h)
		}
	}
	require.NotEmpty(t, pages, "pages: %v", names)
	require.Contains(t, names, blobfile.Name(image, false), "the image is stored raw")
	require.Contains(t, names, blobfile.Name(text, true), "the text is stored compressed")
	return image, text, pages
}

// TestBlobBombsBoundedMemory: references that claim far more content than
// their blobs hold — 16 GiB behind a 64 KiB raw image, 64 MiB behind a
// zstd frame of a few KiB that really does decode to 64 MiB (of other
// content), 32 GiB behind each compressed page — make no reader allocate
// more than twice the record cap plus the largest blob it decodes (of
// which it holds at most one capped window, whatever a frame asks) beyond what it allocates reading the same session
// with the same references claiming one byte more than their content
// (the same damage, found the same way, but for the size; no blob is
// returned to count beside them): Load, LoadRevision,
// History, Export, ReadBlob, Search (its feed reads the latest
// revisions), Verify (plain and deep) and Backup, each measured alone
// (TotalAlloc: every byte allocated, not only what stays live). Each
// fails naming the blob, or reports it; none takes the store down.
func TestBlobBombsBoundedMemory(t *testing.T) {
	// One session, built once and only read: each case bombs a copy.
	built := openUncheckedStoreWith(t, Options{MaxRecordBytes: bombMaxRecord})
	image, text, pages := bombSession(t, built, bombID)
	for _, bomb := range []string{"raw", "zst", "pages"} {
		t.Run(bomb, func(t *testing.T) { testBlobBomb(t, bomb, built, image, text, pages) })
	}
}

const (
	bombMaxRecord = 1 << 20
	bombID        = session.SessionID("bomb")
)

func testBlobBomb(t *testing.T, bomb string, built *Store, image, text string, pages []string) {
	ctx := context.Background()
	const maxRecord, id = bombMaxRecord, bombID
	var bombed []string
	switch bomb {
	case "raw":
		bombed = []string{image}
	case "zst":
		bombed = []string{text}
	case "pages":
		bombed = pages
	}
	// Two copies of the session: in control, the references claim one
	// byte more than their content; in st, the bombs.
	open := func(claim func(hash string, size int64) int64) (*Store, string) {
		root := t.TempDir()
		require.NoError(t, os.CopyFS(root, os.DirFS(built.Dir())))
		dir := filepath.Join(root, string(id))
		claimSizes(t, dir, bombed, claim)
		st, err := Open(root, Options{Search: searchindex.New(), MaxRecordBytes: maxRecord})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st, dir
	}
	control, _ := open(func(_ string, size int64) int64 { return size + 1 })
	claims := map[string]int64{}
	st, dir := open(func(h string, _ int64) int64 {
		switch h {
		case image:
			claims[h] = 16 << 30
		case text:
			claims[h] = 64 << 20
		default:
			claims[h] = 32 << 30
		}
		return claims[h]
	})
	if bomb == "zst" { // the text's blob becomes a frame of 64 MiB of zeros
		enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(archive.Window))
		require.NoError(t, err)
		frame := enc.EncodeAll(make([]byte, 64<<20), nil)
		require.NoError(t, enc.Close())
		require.Less(t, len(frame), 64<<10)
		require.NoError(t, os.WriteFile(filepath.Join(dir, BlobDir, blobfile.Name(text, true)), frame, 0o600))
	}

	// Twice the record cap, plus the largest blob an operation decodes,
	// and a MiB of slack. What a read holds of a blob is its content (a
	// buffer of its size, decoded into in one pass, never past it) or,
	// for a claim its file does not justify, the window of the one
	// hashing decoder: at most archive.Window (8 MiB), once per process,
	// however many cores read — below the 64 MiB the zst bomb decodes
	// to; the raw bomb and the pages decode to less than a record cap,
	// read or hashed.
	bound := uint64(2*maxRecord + archive.Window + 1<<20)
	allocs := func(fn func(st *Store) error, st *Store) (uint64, error) {
		var before, after runtime.MemStats
		runtime.GC()
		// No collection while fn runs: one would empty the decoders' pool
		// at a moment that varies from run to run, and fn would then pay
		// for new decoders (8 MiB each) that the control did not.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		runtime.ReadMemStats(&before)
		err := fn(st)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, err
	}
	measure := func(what string, fn func(st *Store) error) error {
		t.Helper()
		if raceEnabled { // whose sync.Pool drops decoders at random: each read may build new ones, and no bound holds
			return fn(st)
		}
		base, _ := allocs(fn, control)
		alloc, err := allocs(fn, st)
		t.Logf("%-17s allocated %6.1f MiB, control %6.1f MiB (bound %.1f MiB more): %.160v", what, float64(alloc)/(1<<20), float64(base)/(1<<20), float64(bound)/(1<<20), err)
		require.LessOrEqual(t, alloc, base+bound, "%s allocated beyond twice the record cap and the largest blob it decodes", what)
		return err
	}
	isBlobErr := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, ErrBlob)
		require.Contains(t, err.Error(), BlobDir+"/")
	}

	// The latest revision keeps the first messages in pages, whose content
	// the test leaves as written: it reads the pages' bombs, and the zstd
	// bomb (whose size its page's reference does not claim). Revision 3
	// holds the first messages inline: it reads the image's and the
	// text's bombs.
	latestBombed, rev3Bombed := bomb != "raw", bomb != "pages"
	expect := func(bombed bool, err error) {
		t.Helper()
		if bombed {
			isBlobErr(err)
		} else {
			require.NoError(t, err)
		}
	}
	expect(latestBombed, measure("Load", func(st *Store) error { _, err := st.Load(ctx, id); return err }))
	expect(rev3Bombed, measure("LoadRevision 3", func(st *Store) error { _, err := st.LoadRevision(ctx, id, 3); return err }))
	isBlobErr(measure("History", func(st *Store) error {
		for _, err := range st.History(ctx, id) {
			if err != nil {
				return err
			}
		}
		return nil
	}))
	isBlobErr(measure("Export", func(st *Store) error { return st.Export(ctx, id, io.Discard, false) }))
	expect(latestBombed, measure("Export latest", func(st *Store) error { return st.Export(ctx, id, io.Discard, true) }))
	for h, claim := range claims {
		isBlobErr(measure("ReadBlob", func(st *Store) error {
			_, err := st.ReadBlob(ctx, id, session.ContentRef{SHA256: h, Size: claim})
			return err
		}))
	}
	require.NoError(t, measure("Search", func(st *Store) error {
		_, err := st.Search(ctx, sessionstore.SearchQuery{Text: "needle"})
		return err
	}))
	for _, deep := range []bool{false, true} {
		var vr sessionstore.VerifyReport
		require.NoError(t, measure(fmt.Sprintf("Verify deep=%v", deep), func(st *Store) error {
			var err error
			vr, err = st.VerifyWith(ctx, sessionstore.VerifyOptions{Deep: deep}, id)
			return err
		}))
		require.False(t, vr.OK())
		require.Contains(t, vr.Sessions[0].Problems[0].Message, BlobDir+"/")
	}
	var br maintenance.BackupReport
	require.NoError(t, measure("Backup", func(st *Store) error {
		var err error
		br, err = st.Backup(ctx, filepath.Join(t.TempDir(), "copy"), id)
		return err
	}))
	require.False(t, br.OK(), "the copy holds the same bombs: its verify says so")
}
