package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The demo store goes to PostgreSQL and back: every session's log.jsonl
// in the copy is byte for byte the original's, and the commands that read
// a store say the same of the database as of the directory.
func TestMigrateDemoRoundTrip(t *testing.T) {
	orig := t.TempDir()
	r := sessions(t, nil, "--dir", orig, "demo", "--delay", "10ms")
	require.Equal(t, exitOK, r.Code, r.String())
	dsn := pgtest.NewDatabase(t) // empty: migrate applies the schema

	r = sessions(t, nil, "migrate", "--from", orig, "--to", dsn)
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "sessions migrated from "+orig)
	require.Contains(t, r.Stdout, "both sides match byte for byte")

	back := filepath.Join(t.TempDir(), "back")
	r = sessions(t, nil, "migrate", "--from", dsn, "--to", back, "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	var rep migrateReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep))

	entries, err := os.ReadDir(orig)
	require.NoError(t, err)
	var ids []string
	for _, e := range entries {
		if e.IsDir() && e.Name()[0] != '.' {
			ids = append(ids, e.Name())
		}
	}
	require.Len(t, rep.Sessions, len(ids))
	require.Len(t, ids, 3, "the demo's sessions")
	for i, id := range ids {
		require.Equal(t, id, string(rep.Sessions[i].ID))
		want, err := os.ReadFile(filepath.Join(orig, id, "log.jsonl"))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(back, id, "log.jsonl"))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "session %s: log.jsonl after the round trip", id)

		// export: the same bytes from the three stores.
		e1 := sessions(t, nil, "--dir", orig, "export", id, "--all-revisions")
		e2 := sessions(t, nil, "--dir", dsn, "export", id, "--all-revisions")
		e3 := sessions(t, nil, "--dir", back, "export", id, "--all-revisions")
		require.Equal(t, exitOK, e2.Code, e2.String())
		require.Equal(t, e1.Stdout, e2.Stdout)
		require.Equal(t, e1.Stdout, e3.Stdout)
		for _, cmd := range [][]string{{"show", id}, {"show", id, "--rev", "1"}, {"export", id, "--latest"}} {
			a := sessions(t, nil, append([]string{"--dir", orig}, cmd...)...)
			b := sessions(t, nil, append([]string{"--dir", dsn}, cmd...)...)
			require.Equal(t, exitOK, b.Code, b.String())
			require.Equal(t, a.Stdout, b.Stdout, "%v", cmd)
		}
		r = sessions(t, nil, "--dir", dsn, "log", id)
		require.Equal(t, exitOK, r.Code, r.String())
		require.Contains(t, r.Stdout, "REV")
		r = sessions(t, nil, "--dir", dsn, "lease", id)
		require.Equal(t, exitOK, r.Code, r.String())
		require.Contains(t, r.Stdout, "free")
	}

	// ls: the same sessions, revisions and states.
	list := func(store string) []summary.Summary {
		r := sessions(t, nil, "--dir", store, "ls", "--json", "--order", "id_asc")
		require.Equal(t, exitOK, r.Code, r.String())
		var p summary.Page
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &p))
		for i := range p.Items {
			p.Items[i].Lease, p.Items[i].Sizes = summary.LeaseStatus{}, summary.Sizes{}
		}
		return p.Items
	}
	require.Equal(t, list(orig), list(dsn))
	require.Equal(t, list(orig), list(back))

	for _, store := range []string{dsn, back} {
		r = sessions(t, nil, "--dir", store, "verify")
		require.Equal(t, exitOK, r.Code, r.String())
		require.Contains(t, r.Stdout, "3 sessions verified: all sound")
	}

	// Nothing is overwritten.
	r = sessions(t, nil, "migrate", "--from", orig, "--to", dsn)
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "already exists")

	// du: a session's records take the bytes of its log.jsonl.
	du := func(store string) []sessionstore.SessionUsage {
		r := sessions(t, nil, "--dir", store, "du", "--json")
		require.Equal(t, exitOK, r.Code, r.String())
		var rep sessionstore.UsageReport
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep))
		for i := range rep.Sessions {
			rep.Sessions[i] = sessionstore.SessionUsage{ID: rep.Sessions[i].ID, LogBytes: rep.Sessions[i].LogBytes}
		}
		return rep.Sessions
	}
	require.Equal(t, du(orig), du(dsn))
	// watch follows the database as it follows a directory.
	shown := watchOnce(t, dsn)
	require.Contains(t, shown, "3 sessions")
	require.Contains(t, shown, ids[2])

	// A prefix in lower case names a session in the database too.
	// (The demo's IDs are made in one millisecond, monotonically: they
	// may share most of their characters. Take the shortest prefix that
	// names ids[2] alone.)
	n := 1
	for _, other := range ids {
		for other != ids[2] && strings.HasPrefix(other, ids[2][:n]) {
			n++
		}
	}
	r = sessions(t, nil, "--dir", dsn, "lease", strings.ToLower(ids[2][:n]))
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, ids[2])

	// rm works on the database; file-only commands say what they need.
	r = sessions(t, nil, "--dir", dsn, "rm", ids[0])
	require.Equal(t, exitOK, r.Code, r.String())
	r = sessions(t, []string{"SESSIONSTORE_DIR=" + dsn}, "ls", "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	require.NotContains(t, r.Stdout, ids[0])
	for _, args := range [][]string{{"repair", ids[1]}, {"backup", t.TempDir()}, {"compact", "--keep-last", "1"}} {
		r = sessions(t, nil, append([]string{"--dir", dsn}, args...)...)
		require.Equal(t, exitFail, r.Code, r.String())
		require.Contains(t, r.Stderr, "works on a directory store", args[0])
	}
}

func TestMigrateSchemaOnly(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	r := sessions(t, nil, "ls", "--dir", dsn)
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "sessions migrate --schema")
	r = sessions(t, nil, "migrate", "--schema", "--to", dsn)
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, fmt.Sprintf("version 0 → %d", pgstore.SchemaVersion()))
	r = sessions(t, nil, "migrate", "--schema", "--to", dsn)
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "(0 migrations applied)")
	r = sessions(t, nil, "ls", "--dir", dsn)
	require.Equal(t, exitOK, r.Code, r.String())
}

// blobStore is a directory store holding session "blobs", whose content
// (a 1 MiB image and a 64 KiB text, each attached twice) is kept out of
// line.
func blobStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	img := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(img) // never fails
	text := strings.Repeat("a line of a file\n", 64<<10/17)
	s := sessiontest.New("blobs")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{
			{Type: session.PartText, Text: text},
			{Type: session.PartImage, MediaType: "image/png", Data: img},
			{Type: session.PartText, Text: fmt.Sprintf("look (%d)", i)},
		}}))
		_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	return dir
}

// blobFiles returns the names and contents of a session's blob files.
func blobFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// pagedSession adds to the directory store dir session "paged", a
// conversation of 200 short messages written with a 16 KiB record cap, so
// that its full records keep the older messages in pages (blobs).
func pagedSession(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{MaxRecordBytes: 16 << 10})
	require.NoError(t, err)
	defer st.Close()
	s := sessiontest.New("paged")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for i := range 200 {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, strings.Repeat(fmt.Sprintf("%d ", i), 400), sessiontest.Epoch)))
		_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
}

// Sessions whose content is kept out of line, and whose long conversation
// is in pages, go to PostgreSQL and back with their blobs: the logs and
// the blob files of the copies are the originals', byte for byte, and both
// stores verify and export alike. A blob missing from the source fails
// that session's copy.
func TestMigrateBlobs(t *testing.T) {
	orig := blobStore(t)
	pagedSession(t, orig)
	dsn := pgtest.NewDatabase(t)
	r := sessions(t, nil, "migrate", "--from", orig, "--to", dsn, "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	var rep migrateReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep))
	require.Len(t, rep.Sessions, 2)
	require.Equal(t, 2, rep.Sessions[0].Blobs, "the image and the text, once each")
	require.Positive(t, rep.Sessions[1].Blobs, "the pages")

	back := filepath.Join(t.TempDir(), "back")
	r = sessions(t, nil, "migrate", "--from", dsn, "--to", back)
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "blobs: 5 records and 2 blobs copied, verified")
	for _, id := range []string{"blobs", "paged"} {
		want, err := os.ReadFile(filepath.Join(orig, id, "log.jsonl"))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(back, id, "log.jsonl"))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), id)
		require.Equal(t, blobFiles(t, filepath.Join(orig, id, "blobs")), blobFiles(t, filepath.Join(back, id, "blobs")), id)
	}
	for _, store := range []string{dsn, back} {
		r = sessions(t, nil, "--dir", store, "verify")
		require.Equal(t, exitOK, r.Code, r.String())
		for _, cmd := range [][]string{{"export", "blobs"}, {"show", "blobs"}, {"export", "paged"}, {"export", "paged", "--latest"}} {
			a := sessions(t, nil, append([]string{"--dir", orig}, cmd...)...)
			b := sessions(t, nil, append([]string{"--dir", store}, cmd...)...)
			require.Equal(t, exitOK, b.Code, b.String())
			require.Equal(t, a.Stdout, b.Stdout, "%v", cmd)
		}
	}
	r = sessions(t, nil, "--dir", dsn, "du", "--json", "blobs")
	require.Equal(t, exitOK, r.Code, r.String())
	var du sessionstore.UsageReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &du))
	require.Equal(t, int64(1<<20+64<<10/17*17), du.Total.BlobBytes, "each content once, as it is")

	// A blob gone from the source: the session is not copied.
	blobs := filepath.Join(back, "blobs", "blobs")
	entries, err := os.ReadDir(blobs)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(blobs, entries[0].Name())))
	empty := pgtest.NewDatabase(t)
	r = sessions(t, nil, "migrate", "--from", back, "--to", empty, "blobs")
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "session blobs")
	require.Contains(t, r.Stderr, "missing from the source")
	r = sessions(t, nil, "--dir", empty, "ls")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "no sessions")
}

// du has a BLOBS column when a session keeps content out of line, and
// counts it in the total.
func TestDuBlobsColumn(t *testing.T) {
	dir := blobStore(t)
	r := sessions(t, nil, "--dir", dir, "du", "--bytes")
	require.Equal(t, exitOK, r.Code, r.String())
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	require.Len(t, lines, 2, r.Stdout)
	require.Equal(t, []string{"ID", "LOG", "ARCHIVES", "FORENSIC", "BLOBS", "OTHER", "TOTAL"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	r = sessions(t, nil, "--dir", dir, "du", "--json")
	var rep sessionstore.UsageReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep))
	u := rep.Sessions[0]
	require.Positive(t, u.BlobBytes)
	require.Equal(t, []string{"blobs", fmt.Sprint(u.LogBytes), "0", "0", fmt.Sprint(u.BlobBytes), fmt.Sprint(u.OtherBytes), fmt.Sprint(u.TotalBytes)}, row)
}

// A session whose records are larger than the default cap (its writer's
// cap was larger) goes to PostgreSQL and back with the default cap on
// every side: each Import takes its records and records a cap that reads
// them, and every store reads it.
func TestMigrateAboveTheDefaultCap(t *testing.T) {
	ctx := context.Background()
	orig := t.TempDir()
	st, err := jsonlstore.Open(orig, jsonlstore.Options{MaxRecordBytes: 32 << 20})
	require.NoError(t, err)
	s := sessiontest.New("wide")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	msg, _ := sessiontest.WideToolCall(sessionstore.DefaultMaxRecordBytes + 1<<20)
	require.NoError(t, s.AppendMessage(msg))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, st.Close())
	dsn := pgtest.NewDatabase(t)

	r := sessions(t, nil, "migrate", "--from", orig, "--to", dsn)
	require.Equal(t, exitOK, r.Code, r.String())
	back := filepath.Join(t.TempDir(), "back")
	r = sessions(t, nil, "migrate", "--from", dsn, "--to", back)
	require.Equal(t, exitOK, r.Code, r.String())
	want, err := os.ReadFile(filepath.Join(orig, "wide", "log.jsonl"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(back, "wide", "log.jsonl"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	for _, dir := range []string{orig, dsn, back} {
		r = sessions(t, nil, "--dir", dir, "verify", "wide")
		require.Equal(t, exitOK, r.Code, "%s: %s", dir, r.String())
		r = sessions(t, nil, "--dir", dir, "export", "wide", "--latest")
		require.Equal(t, exitOK, r.Code, "%s: %s", dir, r.String())
		require.Contains(t, r.Stdout, `"tool_call_id": "c1"`)
	}
}
