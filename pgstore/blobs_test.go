package pgstore_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// randomBytes is n incompressible bytes, the same for a seed.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// blobRows returns session id's rows of pgstore_blobs, hash → size.
func blobRows(t *testing.T, conn *pgx.Conn, id string) map[string]int64 {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT sha256, size FROM pgstore_blobs WHERE session_id = $1`, id)
	require.NoError(t, err)
	out := map[string]int64{}
	var hash string
	var size int64
	_, err = pgx.ForEachRow(rows, []any{&hash, &size}, func() error {
		out[hash] = size
		return nil
	})
	require.NoError(t, err)
	return out
}

// kinds returns the kind of each record of session id, in order.
func kinds(t *testing.T, conn *pgx.Conn, id string) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT kind FROM pgstore_records WHERE session_id = $1 ORDER BY rev`, id)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// growing appends to w one revision per message m(i), i < n, of s.
func growing(t *testing.T, w sessionstore.Writer, s *session.Session, n int, m func(int) session.Message) []sessnap.Snapshot {
	t.Helper()
	var snaps []sessnap.Snapshot
	for i := range n {
		require.NoError(t, s.AppendMessage(m(i)))
		snap := sessiontest.Snap(t, s)
		_, err := w.Append(t.Context(), w.Revision(), snap)
		require.NoError(t, err)
		snaps = append(snaps, snap)
	}
	return snaps
}

// TestBlobsStoredOncePerSession: the same image attached in every
// revision is one row; the records after the first are deltas that
// reference it; an append that fails after its content went out of line
// (its record refused by the database) leaves no content behind, and the
// next append is whole; deleting the session deletes its content.
func TestBlobsStoredOncePerSession(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	conn := rawConn(t, dsn)
	img := randomBytes(1, 100<<10)
	sess := sessiontest.New("img")
	w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	snaps := growing(t, w, sess, 10, func(i int) session.Message {
		return session.Message{Role: session.RoleUser, Parts: []session.Part{
			{Type: session.PartText, Text: fmt.Sprintf("look (%d)", i)},
			{Type: session.PartImage, MediaType: "image/png", Data: img},
		}}
	})
	require.Equal(t, map[string]int64{hashOf(img): int64(len(img))}, blobRows(t, conn, "img"))
	k := kinds(t, conn, "img")
	require.Equal(t, "full", k[0])
	require.Contains(t, k[2:], "delta", "the revisions after the first content are deltas")
	du, err := s.DiskUsage(ctx, "img")
	require.NoError(t, err)
	require.Equal(t, int64(len(img)), du.Sessions[0].BlobBytes)
	require.Less(t, du.Sessions[0].LogBytes, int64(len(img)), "the records hold the reference, not the content")
	rec, err := s.Load(ctx, "img")
	require.NoError(t, err)
	require.Equal(t, snaps[len(snaps)-1], rec.Snapshot)

	// Revision 12's record is refused by the database after its new
	// content was inserted: the transaction leaves neither.
	_, err = conn.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql;
		CREATE TRIGGER refuse BEFORE INSERT ON pgstore_records FOR EACH ROW WHEN (NEW.rev = 12) EXECUTE FUNCTION refuse()`)
	require.NoError(t, err)
	other := randomBytes(2, 50<<10)
	require.NoError(t, sess.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{
		{Type: session.PartImage, MediaType: "image/png", Data: other},
	}}))
	next := sessiontest.Snap(t, sess)
	_, err = w.Append(ctx, 11, next)
	require.ErrorContains(t, err, "refused by the test")
	require.NotErrorIs(t, err, sessionstore.ErrWriterFailed, "a refused statement is no commit of unknown outcome")
	require.Len(t, blobRows(t, conn, "img"), 1, "the refused append's content is gone with it")
	_, err = conn.Exec(ctx, `DROP TRIGGER refuse ON pgstore_records`)
	require.NoError(t, err)
	_, err = w.Append(ctx, 11, next)
	require.NoError(t, err)
	require.Equal(t, "full", kinds(t, conn, "img")[11], "after a failed append the writer writes a full record")
	rec, err = s.Load(ctx, "img")
	require.NoError(t, err)
	require.Equal(t, next, rec.Snapshot)
	require.Len(t, blobRows(t, conn, "img"), 2)
	_, err = w.Append(ctx, 12, stepOf(t, sess, "after"))
	require.NoError(t, err)
	require.Equal(t, "delta", kinds(t, conn, "img")[12])

	require.NoError(t, w.Delete(ctx))
	require.Empty(t, blobRows(t, conn, "img"), "the session's content goes with it")
}

// stepOf is s's snapshot with its title set to title.
func stepOf(t *testing.T, s *session.Session, title string) sessnap.Snapshot {
	t.Helper()
	require.NoError(t, s.SetTitle(title, session.TitleGenerated))
	return sessiontest.Snap(t, s)
}

// TestAppendTooLargeLeavesNoContent: an append whose record is over the
// cap after its content went out of line writes neither, and the writer
// stays usable.
func TestAppendTooLargeLeavesNoContent(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{MaxRecordBytes: 64 << 10})
	conn := rawConn(t, dsn)
	sess := sessiontest.New("cap")
	w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	big := session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartImage, MediaType: "image/png", Data: randomBytes(3, 200<<10)}}}
	for range 10 { // inline, under the threshold: 150 KiB in all
		big.Parts = append(big.Parts, session.Part{Type: session.PartText, Text: strings.Repeat("x", 15<<10)})
	}
	require.NoError(t, sess.AppendMessage(big))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sess))
	require.ErrorIs(t, err, sessionstore.ErrTooLarge)
	require.Empty(t, blobRows(t, conn, "cap"))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.Titled("cap", "small")))
	require.NoError(t, err)
}

// TestAcquireResumesDeltas: a new holder resumes from the chain it
// finds (a full record and a delta): its first append is a delta on it.
func TestAcquireResumesDeltas(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	sess := sessiontest.New("resume")
	for i := range 3 {
		require.NoError(t, sess.AppendMessage(session.TextMessage(session.RoleUser, strings.Repeat(fmt.Sprintf("message %d ", i), 100), sessiontest.Epoch)))
	}
	w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	_, err = w.Append(ctx, 1, stepOf(t, sess, "first"))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))

	w, err = s.Acquire(ctx, "resume", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	next := stepOf(t, sess, "renamed")
	_, err = w.Append(ctx, 2, next)
	require.NoError(t, err)
	require.Equal(t, []string{"full", "delta", "delta"}, kinds(t, rawConn(t, dsn), "resume"), "the first record after Acquire is a delta")
	rec, err := s.Load(ctx, "resume")
	require.NoError(t, err)
	require.Equal(t, next, rec.Snapshot)
}

// TestBlobDamage: content that is missing or damaged is corruption at
// the record that references it, for reads, Verify and ReadBlob; a read
// without content does not notice.
func TestBlobDamage(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, pgstore.Options{})
	text := strings.Repeat("a long tool output\n", 2000)
	img := randomBytes(4, 40<<10)
	sess := sessiontest.New("dmg")
	w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	growing(t, w, sess, 4, func(i int) session.Message {
		switch i {
		case 1:
			return session.TextMessage(session.RoleUser, text, sessiontest.Epoch)
		case 2:
			return session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartImage, MediaType: "image/png", Data: img}}}
		}
		return session.TextMessage(session.RoleUser, "short", sessiontest.Epoch)
	})
	require.NoError(t, w.Release(ctx))
	rep, err := s.Verify(ctx, "dmg")
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Equal(t, uint64(5), rep.Sessions[0].Revision)
	textRef := session.ContentRef{Field: session.ContentText, SHA256: hashOf([]byte(text)), Size: int64(len(text))}
	imgRef := session.ContentRef{Field: session.ContentData, SHA256: hashOf(img), Size: int64(len(img))}
	got, err := s.ReadBlob(ctx, "dmg", imgRef)
	require.NoError(t, err)
	require.Equal(t, img, got)

	for _, tc := range []struct {
		name, sql string
		// readErr is what ReadBlob and Load of the image's record get:
		// nil when the content itself is sound (only Verify notices).
		readErr error
	}{
		{"damaged", `UPDATE pgstore_blobs SET content = overlay(content placing '\x00'::bytea from 10) WHERE sha256 = $1`, sessionstore.ErrCorrupt},
		{"wrong size row", `UPDATE pgstore_blobs SET size = size + 1 WHERE sha256 = $1`, nil},
		{"missing", `DELETE FROM pgstore_blobs WHERE sha256 = $1`, sessionstore.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The damage, in a copy of the session in a database of its own.
			db := newDSN(t)
			d := openDSN(t, db, pgstore.Options{})
			_, err := d.Import(ctx, "dmg", s.RecordLines(ctx, "dmg"), func(ref session.ContentRef) ([]byte, error) {
				return s.ReadBlob(ctx, "dmg", ref)
			})
			require.NoError(t, err)
			_, err = rawConn(t, db).Exec(ctx, tc.sql, imgRef.SHA256)
			require.NoError(t, err)

			_, err = d.Load(ctx, "dmg")
			if tc.readErr == nil {
				require.NoError(t, err)
			} else {
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, uint64(5), ce.Revision, "the record loaded, which references the image")
				require.Contains(t, err.Error(), "pgstore_blobs")
			}
			light, err := d.LoadWith(ctx, "dmg", sessionstore.LoadOptions{WithoutContent: true})
			require.NoError(t, err, "a load without content reads none")
			require.Equal(t, uint64(5), light.Revision)
			rec, err := d.LoadRevision(ctx, "dmg", 3)
			require.NoError(t, err, "a revision before the image")
			require.Equal(t, text, rec.Snapshot.Messages[1].Parts[0].Text)

			rep, err := d.Verify(ctx)
			require.NoError(t, err)
			require.False(t, rep.OK())
			p := rep.Sessions[0].Problems[0]
			require.Equal(t, uint64(4), p.Revision, "the first record that references the image: %+v", p)
			require.Contains(t, p.Message, imgRef.SHA256)
			require.Equal(t, 3, rep.Sessions[0].Records, "the records before it are sound")

			_, err = d.ReadBlob(ctx, "dmg", imgRef)
			if tc.readErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.readErr)
			}
			_, err = d.ReadBlob(ctx, "dmg", textRef)
			require.NoError(t, err)
		})
	}
}

// TestAppendRewritesDamagedBlob: a writer that acquired a session and
// attaches again content whose row is damaged (cut to half, emptied,
// overwritten with other bytes of the same length, its size row wrong)
// replaces the row: the revision it acknowledges loads, with the content.
// (The row was kept as it was: ON CONFLICT DO NOTHING, and the writer
// skipped content it read the session held.)
func TestAppendRewritesDamagedBlob(t *testing.T) {
	ctx := t.Context()
	img := randomBytes(9, 48<<10)
	for _, tc := range []struct{ name, sql string }{
		{"half", `UPDATE pgstore_blobs SET content = substring(content from 1 for length(content)/2) WHERE sha256 = $1`},
		{"empty", `UPDATE pgstore_blobs SET content = ''::bytea WHERE sha256 = $1`},
		{"same length", `UPDATE pgstore_blobs SET content = overlay(content placing '\x00'::bytea from 10) WHERE sha256 = $1`},
		{"size row", `UPDATE pgstore_blobs SET size = size + 1 WHERE sha256 = $1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newDSN(t)
			s := openDSN(t, db, pgstore.Options{})
			sess := sessiontest.New("heal")
			w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			look := func() session.Message {
				m := session.TextMessage(session.RoleUser, "look", sessiontest.Epoch)
				m.Parts = append(m.Parts, session.Part{Type: session.PartImage, MediaType: "image/png", Data: img})
				return m
			}
			require.NoError(t, sess.AppendMessage(look()))
			_, err = w.Append(ctx, 1, sessiontest.Snap(t, sess))
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
			_, err = rawConn(t, db).Exec(ctx, tc.sql, hashOf(img))
			require.NoError(t, err)

			// An agent with the whole image in hand attaches it again.
			w, err = s.Acquire(ctx, "heal", sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, sess.AppendMessage(look()))
			rev, err := w.Append(ctx, 2, sessiontest.Snap(t, sess))
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
			rec, err := s.Load(ctx, "heal")
			require.NoError(t, err, "the acknowledged revision loads")
			require.Equal(t, rev, rec.Revision)
			msgs := rec.Snapshot.Messages
			require.Equal(t, img, msgs[len(msgs)-1].Parts[1].Data)
			require.Equal(t, img, msgs[len(msgs)-2].Parts[1].Data, "the earlier revision's content is whole again")
			rep, err := s.Verify(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%+v", rep)
		})
	}
}

// TestImportCopiesBlobs: an import copies the content its records
// reference, in its transaction; content the source lacks is corruption
// at the first record that references it, and nothing is imported.
func TestImportCopiesBlobs(t *testing.T) {
	ctx := t.Context()
	src := mustOpen(t, pgstore.Options{})
	img := randomBytes(5, 30<<10)
	sess := sessiontest.New("imp")
	w, err := src.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	growing(t, w, sess, 4, func(i int) session.Message {
		if i == 0 {
			return session.TextMessage(session.RoleUser, "first", sessiontest.Epoch)
		}
		return session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartImage, MediaType: "image/png", Data: img}}}
	})
	require.NoError(t, w.Release(ctx))
	want, err := src.Load(ctx, "imp")
	require.NoError(t, err)

	dsn := newDSN(t)
	dst := openDSN(t, dsn, pgstore.Options{})
	asked := 0
	n, err := dst.Import(ctx, "imp", src.RecordLines(ctx, "imp"), func(ref session.ContentRef) ([]byte, error) {
		asked++
		return src.ReadBlob(ctx, "imp", ref)
	})
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, 1, asked, "each content is read once")
	got, err := dst.Load(ctx, "imp")
	require.NoError(t, err)
	require.Equal(t, want.Snapshot, got.Snapshot)
	rep, err := dst.Verify(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)

	for _, tc := range []struct {
		name string
		src  sessionstore.BlobSource
	}{
		{"missing", func(session.ContentRef) ([]byte, error) {
			return nil, fmt.Errorf("%w: gone", sessionstore.ErrNotFound)
		}},
		{"wrong content", func(session.ContentRef) ([]byte, error) { return img[1:], nil }},
		{"no source", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDSN(t)
			dst := openDSN(t, dsn, pgstore.Options{})
			_, err := dst.Import(ctx, "imp", src.RecordLines(ctx, "imp"), tc.src)
			var ce *sessionstore.CorruptionError
			require.ErrorAs(t, err, &ce)
			require.NotErrorIs(t, err, sessionstore.ErrNotFound, "the source's missing content is not a missing session")
			require.Equal(t, uint64(3), ce.Revision, "the record that first references the image")
			_, err = dst.Load(ctx, "imp")
			require.ErrorIs(t, err, sessionstore.ErrNotFound)
			var rows int
			require.NoError(t, rawConn(t, dsn).QueryRow(ctx, `SELECT count(*) FROM pgstore_blobs`).Scan(&rows))
			require.Zero(t, rows)
		})
	}
}

// TestForkCopiesItsContent: a fork holds the content its revision
// references (copied by the server in the fork's transaction), and none
// of the source's later content.
func TestForkCopiesItsContent(t *testing.T) {
	ctx := t.Context()
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{})
	a, b := randomBytes(6, 20<<10), randomBytes(7, 20<<10)
	sess := sessiontest.New("src")
	w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	snaps := growing(t, w, sess, 2, func(i int) session.Message {
		return session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartImage, MediaType: "image/png", Data: [][]byte{a, b}[i]}}}
	})
	fw, err := s.Fork(ctx, "src", 2, "fork", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer fw.Release(ctx)
	conn := rawConn(t, dsn)
	require.Equal(t, map[string]int64{hashOf(a): int64(len(a))}, blobRows(t, conn, "fork"))
	require.Len(t, blobRows(t, conn, "src"), 2)
	rec, err := s.Load(ctx, "fork")
	require.NoError(t, err)
	require.Equal(t, adapter.ForkSnapshot(snaps[0], "fork"), rec.Snapshot)
}

// TestPages: a conversation of short messages many times the record cap
// long appends, its full records keeping the older messages in pages
// (rows of pgstore_blobs); every record stays within the cap; it reads
// back whole, without its content too, from a new holder on; a damaged
// page is corruption at the record that references it.
func TestPages(t *testing.T) {
	ctx := t.Context()
	const maxRecord = 16 << 10
	dsn := newDSN(t)
	s := openDSN(t, dsn, pgstore.Options{MaxRecordBytes: maxRecord})
	conn := rawConn(t, dsn)
	sess := sessiontest.New("long")
	w, err := s.Create(ctx, sessiontest.Snap(t, sess), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	msg := func(i int) session.Message {
		return session.TextMessage(session.RoleUser, strings.Repeat(fmt.Sprintf("%d ", i), 500), sessiontest.Epoch)
	}
	growing(t, w, sess, 150, msg)
	require.NoError(t, w.Release(ctx))
	w, err = s.Acquire(ctx, "long", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	snaps := growing(t, w, sess, 50, func(i int) session.Message { return msg(150 + i) })
	require.NoError(t, w.Release(ctx))

	var longest int
	require.NoError(t, conn.QueryRow(ctx, `SELECT max(octet_length(line)) FROM pgstore_records WHERE session_id = 'long'`).Scan(&longest))
	require.LessOrEqual(t, longest, maxRecord+256, "every record within the cap")
	pages := blobRows(t, conn, "long")
	require.NotEmpty(t, pages)
	rec, err := s.Load(ctx, "long")
	require.NoError(t, err)
	require.Equal(t, snaps[len(snaps)-1], rec.Snapshot)
	light, err := s.LoadWith(ctx, "long", sessionstore.LoadOptions{WithoutContent: true})
	require.NoError(t, err)
	require.Equal(t, rec.Snapshot, light.Snapshot, "pages are read without the content too")
	n := 0
	for rec, err := range s.History(ctx, "long") {
		require.NoError(t, err)
		require.Len(t, rec.Snapshot.Messages, n)
		n++
	}
	require.Equal(t, 201, n)
	rep, err := s.Verify(ctx, "long")
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)

	for hash := range pages {
		_, err = conn.Exec(ctx, `UPDATE pgstore_blobs SET content = overlay(content placing '\x00'::bytea from 3) WHERE sha256 = $1`, hash)
		require.NoError(t, err)
	}
	_, err = s.Load(ctx, "long")
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), "pgstore_blobs")
	rep, err = s.Verify(ctx, "long")
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Positive(t, rep.Sessions[0].Problems[0].Revision)
}
