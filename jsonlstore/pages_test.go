package jsonlstore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// pagedCap is the record cap of the page tests: small, so that a
// conversation of a few hundred short messages is many times the cap.
const pagedCap = 16 << 10

// pagedText is message i's text: 1 to 3 KiB, below the blob threshold
// (kept inline), different for every message.
func pagedText(r *rand.Rand, i int) string {
	return fmt.Sprintf("message %d: ", i) + strings.Repeat(string(rune('a'+r.IntN(26))), 1<<10+r.IntN(2<<10))
}

// writePaged creates session id in st with n revisions after its first,
// each adding a message of pagedText (drawn from r), and releases it: a
// conversation kept in pages under pagedCap.
func writePaged(t *testing.T, st *Store, id string, n int, r *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	s := sessiontest.New(id)
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, pagedText(r, i), sessiontest.Epoch)))
		_, err := w.Append(ctx, uint64(i+1), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
}

// requireLinesWithin fails unless every line of session id's log is at
// most limit bytes, and returns how many records are full records with
// pages.
func requireLinesWithin(t *testing.T, st *Store, id session.SessionID, limit int) (paged int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(st.Dir(), string(id), LogFile))
	require.NoError(t, err)
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		require.LessOrEqual(t, len(line), limit, "record %d", i+1)
		if bytes.Contains(line, []byte(`"kind":"full"`)) && record.MayHavePages(line) {
			require.Contains(t, string(line), `"v":4`, "a full record with pages is format 4")
			paged++
		}
	}
	return paged
}

// TestLongConversationInPages: a conversation of short messages (kept
// inline) many times the record cap long goes on appending; every record
// stays within the cap because full records keep their older messages in
// pages; each page is stored once; every revision reads back as appended,
// after a reopen too, and verify (default and deep) passes.
func TestLongConversationInPages(t *testing.T) {
	ctx := context.Background()
	st := openTestStoreWith(t, Options{MaxRecordBytes: pagedCap})
	root := st.Dir()

	r := rand.New(rand.NewPCG(7, 7))
	s := sessiontest.New("long")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	var texts []string
	appendN := func(w sessionstore.Writer, n int) {
		for range n {
			text := pagedText(r, len(texts))
			texts = append(texts, text)
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, text, sessiontest.Epoch)))
			_, err := w.Append(ctx, uint64(len(texts)), sessiontest.Snap(t, s))
			require.NoError(t, err, "append %d", len(texts))
		}
	}
	appendN(w, 120)
	require.NoError(t, w.Release(ctx))

	// Reopened, the holder resumes the chain (its full record has pages)
	// and goes on.
	require.NoError(t, st.Close())
	st, err = Open(root, Options{MaxRecordBytes: pagedCap})
	require.NoError(t, err)
	defer st.Close()
	w, err = st.Acquire(ctx, "long", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	appendN(w, 40)
	require.NoError(t, w.Release(ctx))

	total := 0
	for _, text := range texts {
		total += len(text)
	}
	require.Greater(t, total, 16*pagedCap, "the conversation is many times the cap")
	require.Positive(t, requireLinesWithin(t, st, "long", pagedCap), "full records with pages")

	// Pages are stored once: the blobs hold the conversation about once.
	var blobBytes int64
	names, err := blobfile.Names(st.fs, "long")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(root, "long", BlobDir, name))
		require.NoError(t, err)
		blobBytes += fi.Size()
	}
	require.LessOrEqual(t, blobBytes, int64(total)*13/10, "each page stored once")

	want, err := sessnap.Encode(s)
	require.NoError(t, err)
	rec, err := st.Load(ctx, "long")
	require.NoError(t, err)
	got, err := sessnap.Marshal(rec.Snapshot)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	light, err := st.LoadWith(ctx, "long", sessionstore.LoadOptions{WithoutContent: true})
	require.NoError(t, err)
	require.Len(t, light.Snapshot.Messages, len(texts), "a load without the content still reads the pages")

	for _, rev := range []uint64{1, 2, 57, 100, 120, 121, 122, 140, 161} {
		rec, err := st.LoadRevision(ctx, "long", rev)
		require.NoError(t, err, "revision %d", rev)
		require.Len(t, rec.Snapshot.Messages, int(rev)-1)
		for i, m := range rec.Snapshot.Messages {
			require.Equal(t, texts[i], m.Parts[0].Text, "revision %d message %d", rev, i)
		}
	}
	n := uint64(0)
	for rec, err := range st.History(ctx, "long") {
		require.NoError(t, err)
		n++
		require.Equal(t, n, rec.Revision)
		require.Len(t, rec.Snapshot.Messages, int(n)-1)
	}
	require.Equal(t, uint64(len(texts)+1), n)

	for _, deep := range []bool{false, true} {
		vr, err := st.VerifyWith(ctx, sessionstore.VerifyOptions{Deep: deep}, "long")
		require.NoError(t, err)
		require.True(t, vr.OK(), "deep %v: %+v", deep, vr)
	}
}

// TestDamagedPageIsCorruption: a page that is missing or damaged is
// corruption at the record that references it, naming the blob, for a
// load and for verify.
func TestDamagedPageIsCorruption(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []string{"missing", "flipped"} {
		t.Run(damage, func(t *testing.T) {
			st := openUncheckedStoreWith(t, Options{MaxRecordBytes: pagedCap}) // the test damages it
			writePaged(t, st, "pg", 60, rand.New(rand.NewPCG(3, 3)))
			names, err := blobfile.Names(st.fs, "pg")
			require.NoError(t, err)
			require.NotEmpty(t, names, "pages")
			path := filepath.Join(st.Dir(), "pg", BlobDir, names[0])
			switch damage {
			case "missing":
				require.NoError(t, os.Remove(path))
			case "flipped":
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				data[len(data)/2] ^= 1
				require.NoError(t, os.WriteFile(path, data, 0o600))
			}
			_, err = st.Load(ctx, "pg")
			var ce *sessionstore.CorruptionError
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, ErrBlob)
			require.Equal(t, "pg/"+LogFile, ce.Path, "located at the record that references the page")
			require.Contains(t, ce.Error(), "pg/"+BlobDir+"/", "and naming the blob")
			vr, err := st.Verify(ctx, "pg")
			require.NoError(t, err)
			require.False(t, vr.OK())
			require.Contains(t, vr.Sessions[0].Problems[0].Message, BlobDir)
		})
	}
}

// writeWide creates session id in st with two revisions, the second
// holding a message of 2 MiB inline (sessiontest.WideToolCall), released,
// and returns the session and the message's input.
func writeWide(t *testing.T, st *Store, id string) (*session.Session, string) {
	t.Helper()
	ctx := context.Background()
	s := sessiontest.New(id)
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	msg, input := sessiontest.WideToolCall(2 << 20)
	require.NoError(t, s.AppendMessage(msg))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	return s, input
}

// TestRecordCapIsTheStores: records written under a cap above the reader's
// are read, verified and kept by a reader opened with a smaller cap (the
// writer's cap is recorded in settings.json): never corruption, never cut
// by repair; a holder with the smaller cap goes on under the session's,
// and a fork by it is written under the session's.
func TestRecordCapIsTheStores(t *testing.T) {
	ctx := context.Background()
	const bigCap = 4 << 20
	big := openTestStoreWith(t, Options{MaxRecordBytes: bigCap})
	s, input := writeWide(t, big, "wide")
	got, err := layout.RecordedCap(big.fs, layout.SessionDir("wide"))
	require.NoError(t, err)
	require.Equal(t, bigCap, got)

	for _, own := range []int{1 << 20, 256 << 10} {
		small, err := Open(big.Dir(), Options{MaxRecordBytes: own})
		require.NoError(t, err)
		rec, err := small.Load(ctx, "wide")
		require.NoError(t, err, "cap %d", own)
		require.Len(t, string(rec.Snapshot.Messages[0].Parts[0].Input), len(input))
		vr, err := small.Verify(ctx, "wide")
		require.NoError(t, err)
		require.True(t, vr.OK(), "cap %d: %+v", own, vr)
		rep, err := small.Repair(ctx, "wide", maintenance.RepairOptions{TruncateAtCorruption: true})
		require.NoError(t, err)
		require.False(t, rep.Cut)
		require.Equal(t, uint64(len(s.Conversation())+1), rep.Revision)

		// A holder with the smaller cap appends (a small message) and
		// leaves the recorded cap as it was.
		w, err := small.Acquire(ctx, "wide", sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "thanks", sessiontest.Epoch)))
		_, err = w.Append(ctx, uint64(len(s.Conversation())), sessiontest.Snap(t, s))
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
		got, err := layout.RecordedCap(small.fs, layout.SessionDir("wide"))
		require.NoError(t, err)
		require.Equal(t, bigCap, got)

		// A fork by the smaller cap is written under the session's.
		forkID := session.SessionID(fmt.Sprintf("fork-%d", own))
		fw, err := small.Fork(ctx, "wide", 0, forkID, sessionstore.AcquireOptions{})
		require.NoError(t, err, "cap %d", own)
		require.NoError(t, fw.Release(ctx))
		got, err = layout.RecordedCap(small.fs, layout.SessionDir(forkID))
		require.NoError(t, err)
		require.Equal(t, bigCap, got, "the fork records its source's cap")
		require.NoError(t, small.Close())
	}
}

// TestListingReadsNoPages: a summary computed from the log (summary.json
// gone) counts a paged conversation's messages from its page references,
// reading no page: a listing costs the stored snapshot, not the
// conversation (shown with a page removed, which Load reports).
func TestListingReadsNoPages(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStoreWith(t, Options{MaxRecordBytes: pagedCap}) // the test removes a page
	r := rand.New(rand.NewPCG(5, 5))
	s := sessiontest.New("listed")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for i := range 40 {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, pagedText(r, i), sessiontest.Epoch)))
		_, err := w.Append(ctx, uint64(i+1), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	names, err := blobfile.Names(st.fs, "listed")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, n := range names {
		require.NoError(t, os.Remove(filepath.Join(st.Dir(), "listed", BlobDir, n)))
	}
	require.NoError(t, os.Remove(filepath.Join(st.Dir(), "listed", SummaryFile)))
	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, 40, page.Items[0].MessageCount)
	_, err = st.Load(ctx, "listed")
	require.ErrorIs(t, err, ErrBlob, "the pages are gone: a load needs them")
}
