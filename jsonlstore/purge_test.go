package jsonlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Fake secrets in valid formats (not anyone's keys).
const (
	purgeGitHub = "ghp_" + "Qe7Rt2Yu9Io4Pa1Sd6Fg3Hj8Kl5Zx0Cv2BnM"
	purgeAWS    = "AKIA" + "QW2ER4TY6UI7OP5A"
)

// purgeSecrets are the byte strings no file may hold after a redaction
// (a piece of a key counts too).
var purgeSecrets = []string{purgeGitHub, purgeAWS, purgeGitHub[4:24], purgeAWS[4:]}

// purgeOptions are the options of a store that wrote secrets (redaction
// off, as a release before write-time redaction did) with small blobs
// and pages, so that the session has blobs, pages, deltas and archives.
func purgeOptions(t testing.TB, leaky bool) Options {
	r := redact.Default()
	if leaky {
		var err error
		r, err = redact.New(redact.Options{Off: true})
		require.NoError(t, err)
	}
	return Options{BlobThreshold: 4096, MaxRecordBytes: 64 << 10, Redactor: r, Search: searchindex.New()}
}

// makeLeakySession writes session id with secrets everywhere a store
// keeps them: the title, messages inline, a tool's input, large outputs
// kept as blobs, pages of older messages; then compacts it (an archive)
// and leaves a torn tail holding a secret that the next holder copies
// into forensic/.
func makeLeakySession(t testing.TB, st *Store, id session.SessionID, revs int) {
	t.Helper()
	ctx := context.Background()
	s := sessiontest.New(string(id))
	snap := func(int) sessnap.Snapshot {
		sn := sessiontest.Snap(t, s)
		sn.Title = "deploy with " + purgeAWS
		return sn
	}
	msg := func(i int) {
		var m session.Message
		switch i % 4 {
		case 0:
			m = session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartText, Text: "step " + strings.Repeat("x", i) + " with " + purgeAWS}}}
		case 1:
			in, err := json.Marshal(map[string]string{"cmd": "gh auth login --with-token " + purgeGitHub})
			require.NoError(t, err)
			m = session.Message{Role: session.RoleAssistant, Parts: []session.Part{{Type: session.PartToolCall, ToolCallID: "c" + string(rune('a'+i%26)), Name: "bash", Input: in}}}
		case 2:
			m = session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c" + string(rune('a'+(i-1)%26)), Output: strings.Repeat("AWS_ACCESS_KEY_ID="+purgeAWS+" line\n", 200+i)}}}
		default:
			m = session.Message{Role: session.RoleAssistant, Parts: []session.Part{{Type: session.PartText, Text: "nothing secret here, revision " + strings.Repeat("y", i)}}}
		}
		require.NoError(t, s.AppendMessage(m))
	}
	msg(0)
	w, err := st.Create(ctx, snap(1), sessionstore.AcquireOptions{Label: "test"})
	require.NoError(t, err)
	for i := 2; i <= revs; i++ {
		msg(i)
		_, err := w.Append(ctx, w.Revision(), snap(i))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	_, err = st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: revs / 3}, 0)
	require.NoError(t, err)
	// A torn append holding a secret: the next holder copies it into
	// forensic/ and cuts it.
	f, err := st.fs.OpenFile(layout.LogPath(id), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte(`{"v":1,"schema":1,"rev":` + "999" + `,"gen":9,"time":"2026-11-29T09:00:04.5Z","kind":"full","len":40,"snap":{"title":"` + purgeGitHub))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	w, err = st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "test"})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	if st.search != nil {
		require.NoError(t, st.FlushSearch(ctx))
	}
}

// filesWithSecrets lists the files under root that hold a byte string of
// purgeSecrets.
func filesWithSecrets(t testing.TB, root string) (bad []string, files int) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.HasSuffix(path, ".zst") {
			// Archive segments, compressed blobs, retired packs: what
			// they hold is what counts.
			dec, err := zstd.NewReader(nil)
			require.NoError(t, err)
			b, err = dec.DecodeAll(b, nil)
			dec.Close()
			require.NoError(t, err, path)
		}
		for _, secret := range purgeSecrets {
			if bytes.Contains(b, []byte(secret)) {
				rel, _ := filepath.Rel(root, path)
				bad = append(bad, rel)
				break
			}
		}
		return nil
	}))
	return bad, files
}

// historyOf reads every revision of session id, content resolved.
func historyOf(t testing.TB, st *Store, id session.SessionID) []sessionstore.Record {
	t.Helper()
	var out []sessionstore.Record
	for rec, err := range st.History(context.Background(), id) {
		require.NoError(t, err)
		out = append(out, rec)
	}
	return out
}

// TestRedactStoredSession: a session written with its secrets (a store
// without write-time redaction), with blobs, pages, deltas, an archive
// and a forensic copy, is redacted: afterwards no file under the store's
// root holds a byte of the secrets — log, archive, blobs, pages,
// forensic copies, summary, catalog, search index — every revision reads
// as the old one redacted (same number, generation and time), verify
// finds the store sound, a search for a secret finds nothing, and a
// writer resumes and appends.
func TestRedactStoredSession(t *testing.T) {
	ctx := t.Context()
	leaky := openTestStoreWith(t, purgeOptions(t, true))
	dir := leaky.Dir()
	const id = session.SessionID("leaky")
	makeLeakySession(t, leaky, id, 30)
	_, err := leaky.List(ctx, summary.Query{}) // the catalog holds the title
	require.NoError(t, err)
	bad, _ := filesWithSecrets(t, dir)
	for _, want := range []string{"leaky/log.jsonl", ".catalog/catalog", "leaky/summary.json"} {
		require.Contains(t, bad, want, "the store kept the secrets before")
	}
	res, err := leaky.Search(ctx, sessionstore.SearchQuery{Text: purgeAWS})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits, "the search index held the secrets before")
	require.True(t, slicesHasPrefix(bad, "leaky/archive/"), "%v", bad)
	require.True(t, slicesHasPrefix(bad, "leaky/blobs/"), "%v", bad)
	require.True(t, slicesHasPrefix(bad, "leaky/forensic/"), "%v", bad)
	before := historyOf(t, leaky, id)
	require.NoError(t, leaky.Close())

	st, err := Open(dir, purgeOptions(t, false))
	require.NoError(t, err)
	defer st.Close()
	verifyAtCleanup(t, st)
	reps, err := st.Redact(ctx, []session.SessionID{id}, nil, 0)
	require.NoError(t, err)
	require.Len(t, reps, 1)
	rep := reps[0]
	t.Logf("%+v", rep)
	require.Equal(t, int64(len(before)), rep.Revisions)
	require.Equal(t, rep.Revisions, rep.Rewritten)
	require.Positive(t, rep.Secrets["aws-access-key-id"])
	require.Positive(t, rep.Secrets["github-token"])
	require.True(t, rep.Unarchived)
	require.True(t, rep.Catalog)
	require.True(t, rep.Search)
	require.NotEmpty(t, rep.NotPurged)

	bad, files := filesWithSecrets(t, dir)
	require.Empty(t, bad, "files that still hold a secret")
	require.Greater(t, files, 10)

	after := historyOf(t, st, id)
	require.Len(t, after, len(before))
	r := redact.Default()
	for i := range before {
		b, a := before[i], after[i]
		require.Equal(t, b.Revision, a.Revision)
		require.Equal(t, b.Generation, a.Generation)
		require.True(t, b.Time.Equal(a.Time))
		want, _ := r.Snapshot(b.Snapshot)
		wj, err := sessnap.Marshal(want)
		require.NoError(t, err)
		aj, err := sessnap.Marshal(a.Snapshot)
		require.NoError(t, err)
		require.JSONEq(t, string(wj), string(aj), "revision %d", b.Revision)
	}
	res, err = st.Search(ctx, sessionstore.SearchQuery{Text: purgeAWS})
	require.NoError(t, err)
	require.Empty(t, res.Hits)
	res, err = st.Search(ctx, sessionstore.SearchQuery{Text: "deploy"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits, "the rest is indexed")

	// A writer resumes the chain and appends.
	w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "test"})
	require.NoError(t, err)
	latest, err := w.Latest(ctx)
	require.NoError(t, err)
	next := latest.Snapshot
	next.Title = "after redaction"
	_, err = w.Append(ctx, w.Revision(), next)
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.Len(t, historyOf(t, st, id), len(before)+1)

	// Again: nothing left to rewrite.
	reps, err = st.Redact(ctx, []session.SessionID{id}, nil, 0)
	require.NoError(t, err)
	require.Zero(t, reps[0].Rewritten)
}

func slicesHasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestRedactRefusesHeldAndRetired: a held session is skipped (not
// waited for), a retired one refused with the way out.
func TestRedactRefusesHeldAndRetired(t *testing.T) {
	ctx := t.Context()
	st := openTestStoreWith(t, purgeOptions(t, true))
	makeLeakySession(t, st, "held", 6)
	makeLeakySession(t, st, "gone", 6)
	w, err := st.Acquire(ctx, "held", sessionstore.AcquireOptions{Label: "agent"})
	require.NoError(t, err)
	defer func() { _ = w.Release(ctx) }()
	_, err = st.Retire(ctx, maintenance.RetireOptions{IDs: []session.SessionID{"gone"}})
	require.NoError(t, err)
	reps, err := st.Redact(ctx, []session.SessionID{"held", "gone"}, redact.Default(), 0)
	require.ErrorIs(t, err, ErrRetired)
	require.Contains(t, err.Error(), "sessions restore gone")
	require.NotEmpty(t, reps[0].Skipped)
	require.Zero(t, reps[0].Rewritten)
}

// TestRedactForensicInlineBlob: a tool output kept as a blob only for the
// length of the private key in it goes back inline once redacted; a
// forensic copy that references the old blob is given a blob of its
// own, redacted, so that no file keeps the key (the old blob is
// collected).
func TestRedactForensicInlineBlob(t *testing.T) {
	ctx := t.Context()
	leaky := openTestStoreWith(t, purgeOptions(t, true))
	dir := leaky.Dir()
	const id = session.SessionID("pem")
	body := strings.Repeat("MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n", 20)
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + body + "-----END RSA PRIVATE KEY-----"
	s := sessiontest.New(string(id))
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "show the key", sessiontest.Epoch)))
	w, err := leaky.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{Label: "test"})
	require.NoError(t, err)
	out := strings.Repeat("build ok\n", 330) + key
	require.Greater(t, len(out), 4096)
	require.Less(t, len(out)-len(key)+64, 4096, "inline once redacted")
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c", Output: out}}}))
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	logPath := filepath.Join(dir, string(id), "log.jsonl")
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	last := lines[len(lines)-1]
	require.Contains(t, string(last), `"sha256":"`, "the output is a blob")
	// A torn copy of the last record: the next holder sets it aside in
	// forensic/, reference and all.
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(last[:len(last)-3])
	require.NoError(t, err)
	require.NoError(t, f.Close())
	w, err = leaky.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "test"})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, leaky.Close())
	holding := func() (bad []string) {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.HasSuffix(p, ".zst") {
				dec, err := zstd.NewReader(nil)
				require.NoError(t, err)
				c, err = dec.DecodeAll(c, nil)
				dec.Close()
				require.NoError(t, err, p)
			}
			if bytes.Contains(c, []byte(body[:64])) {
				rel, _ := filepath.Rel(dir, p)
				bad = append(bad, rel)
			}
			return nil
		}))
		return bad
	}
	before := holding()
	require.True(t, slicesHasPrefix(before, "pem/blobs/"), "%v", before)
	var blobHash string
	for _, p := range before {
		blobHash = strings.TrimSuffix(filepath.Base(p), ".zst")
	}
	copies, err := filepath.Glob(filepath.Join(dir, string(id), "forensic", "*"))
	require.NoError(t, err)
	require.Len(t, copies, 1)
	c, err := os.ReadFile(copies[0])
	require.NoError(t, err)
	require.Contains(t, string(c), blobHash, "the forensic copy references the blob")

	st, err := Open(dir, purgeOptions(t, false))
	require.NoError(t, err)
	defer st.Close()
	verifyAtCleanup(t, st)
	reps, err := st.Redact(ctx, []session.SessionID{id}, nil, 0)
	require.NoError(t, err)
	t.Logf("%+v", reps[0])
	require.Empty(t, holding(), "files that still hold the key")
	h := historyOf(t, st, id)
	require.Contains(t, h[len(h)-1].Snapshot.Messages[1].Parts[0].Output, "[REDACTED:private-key:")
}
