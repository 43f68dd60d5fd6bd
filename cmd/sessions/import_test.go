package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer/ingest"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// importedSessions opens the store at root and loads its sessions.
func importedSessions(t *testing.T, root string) map[session.SessionID]*session.Session {
	t.Helper()
	st, err := jsonlstore.OpenExisting(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	page, err := st.List(ctx, summary.Query{Limit: summary.MaxLimit})
	require.NoError(t, err)
	out := map[session.SessionID]*session.Session{}
	for _, it := range page.Items {
		rec, err := st.Load(ctx, it.ID)
		require.NoError(t, err)
		s, err := rec.Session()
		require.NoError(t, err)
		out[it.ID] = s
	}
	return out
}

// TestImportCommand imports the real transcripts with the command: a
// report of each source, totals, the JSON report, a second run that reads
// nothing, a dry run that creates no store, and bad arguments.
func TestImportCommand(t *testing.T) {
	dir, _ := importtest.Corpus(t, "../..")
	root := filepath.Join(t.TempDir(), "store")

	dry := sessions(t, nil, "--dir", root, "import", "claude-code", filepath.Join(dir, "claude-code"), "--dry-run")
	require.Equal(t, exitOK, dry.Code, dry.String())
	require.Contains(t, dry.Stdout, "would be created claude-code-")
	require.Contains(t, dry.Stdout, "dry run: nothing was written")
	_, err := os.Stat(root)
	require.ErrorIs(t, err, os.ErrNotExist, "a dry run creates no store")

	r := sessions(t, nil, "--dir", root, "import", "claude-code", filepath.Join(dir, "claude-code"))
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "created claude-code-")
	require.Contains(t, r.Stdout, "skipped")
	require.Contains(t, r.Stdout, "not_conversation")
	require.Regexp(t, `claude-code: \d+ sources; \d+ read, 0 unchanged`, r.Stdout)
	require.Empty(t, r.Stderr, "no progress bar when stderr is not a terminal")

	again := sessions(t, nil, "--dir", root, "import", "claude-code", filepath.Join(dir, "claude-code"), "--json")
	require.Equal(t, exitOK, again.Code, again.String())
	var rep ingest.Report
	require.NoError(t, json.Unmarshal([]byte(again.Stdout), &rep))
	require.Equal(t, rep.Totals.Sources, rep.Totals.Unchanged)
	require.Zero(t, rep.Totals.Revisions)

	c := sessions(t, nil, "--dir", root, "import", "codex", filepath.Join(dir, "codex"))
	require.Equal(t, exitOK, c.Code, c.String())
	require.Contains(t, c.Stdout, "created codex-")
	sessionsIn := importedSessions(t, root)
	require.Equal(t, len(sessionsIn), strings.Count(r.Stdout, " created ")+strings.Count(c.Stdout, " created "))

	for _, bad := range [][]string{{"import"}, {"import", "cursor"}} {
		res := sessions(t, nil, append([]string{"--dir", root}, bad...)...)
		require.Equal(t, exitUsage, res.Code, "%v: %s", bad, res.String())
	}
	missing := sessions(t, nil, "--dir", root, "import", "codex", filepath.Join(dir, "nowhere"))
	require.Equal(t, exitFail, missing.Code)
	// Without a path, each tool's own directory under HOME (empty here).
	none := sessions(t, nil, "--dir", root, "import", "codex")
	require.Equal(t, exitFail, none.Code)
	require.Contains(t, none.Stderr, "no PATH given")
}

// TestShowAndExportImported: show prints an imported session to read;
// export writes it back in each tool's format, which imports again to
// the same conversation; the jsonl form is the records as stored.
func TestShowAndExportImported(t *testing.T) {
	dir, _ := importtest.Corpus(t, "../..")
	root := filepath.Join(t.TempDir(), "store")
	for _, tool := range []string{"claude-code", "codex"} {
		r := sessions(t, nil, "--dir", root, "import", tool, filepath.Join(dir, tool))
		require.Equal(t, exitOK, r.Code, r.String())
	}
	imported := importedSessions(t, root)
	require.NotEmpty(t, imported)
	for id, s := range imported {
		if s.Kind() == session.KindSubagent {
			continue
		}
		md := sessions(t, nil, "--dir", root, "show", string(id), "--format", "markdown")
		require.Equal(t, exitOK, md.Code, md.String())
		require.Contains(t, md.Stdout, "## User")
		require.Contains(t, md.Stdout, "## Assistant")
		require.Contains(t, md.Stdout, "**Imported from:** "+s.Origin().Tool)
		text := sessions(t, nil, "--dir", root, "show", string(id), "--format", "text")
		require.Equal(t, exitOK, text.Code, text.String())
		require.Contains(t, text.Stdout, "\nUSER ")
		if strings.Contains(md.Stdout, "*tool call*") {
			require.Contains(t, md.Stdout, "*tool result*")
			require.Contains(t, text.Stdout, "[tool call]")
		}

		format := s.Origin().Tool
		out := sessions(t, nil, "--dir", root, "export", string(id), "--format", format)
		require.Equal(t, exitOK, out.Code, out.String())
		src := t.TempDir()
		name := "back.jsonl"
		if format == "codex" {
			name = "rollout-2026-01-01T00-00-00-" + s.Origin().SessionID + ".jsonl"
		}
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(out.Stdout), 0o600))
		other := filepath.Join(t.TempDir(), "other")
		back := sessions(t, nil, "--dir", other, "import", format, filepath.Join(src, name))
		require.Equal(t, exitOK, back.Code, back.String())
		again, ok := importedSessions(t, other)[id]
		require.True(t, ok, "%s imported again as itself: %s", id, back.Stdout)
		importtest.SameConversation(t, s.Conversation(), again.Conversation(), string(id))

		records := sessions(t, nil, "--dir", root, "export", string(id), "--format", "jsonl")
		require.Equal(t, exitOK, records.Code, records.String())
		raw, err := os.ReadFile(filepath.Join(root, string(id), jsonlstore.LogFile))
		require.NoError(t, err)
		require.Equal(t, string(raw), records.Stdout, "the records as stored")

		latest := sessions(t, nil, "--dir", root, "export", string(id))
		require.Equal(t, exitOK, latest.Code)
		var snap struct {
			ID       session.SessionID `json:"id"`
			Messages []json.RawMessage `json:"messages"`
		}
		require.NoError(t, json.Unmarshal([]byte(latest.Stdout), &snap), "the default is the latest snapshot")
		require.Equal(t, id, snap.ID)
		require.Len(t, snap.Messages, s.MessageCount())
	}
	bad := sessions(t, nil, "--dir", root, "export", "claude-code", "--format", "jsonl", "--all-revisions")
	require.Equal(t, exitUsage, bad.Code)
	bad = sessions(t, nil, "--dir", root, "show", "claude-code", "--format", "html")
	require.Equal(t, exitUsage, bad.Code)
}

func TestConfirm(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   bool
	}{
		{"yes", "y\n", true},
		{"Yes", "Yes\n", true},
		{"no", "n\n", false},
		{"enter", "\n", false},
		{"nothing", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.Equal(t, tt.want, confirm(strings.NewReader(tt.answer), &out, "it writes 5 GiB"))
			require.Equal(t, "it writes 5 GiB. Write it? [y/N] ", out.String())
		})
	}
}

func TestTerminalText(t *testing.T) {
	var out bytes.Buffer
	w := &terminalText{w: &out}
	in := "title \x1b]0;pwned\x07\n\tcode\x7f é"
	for i := range len(in) { // one byte a write: characters cut between writes
		_, err := w.Write([]byte{in[i]})
		require.NoError(t, err)
	}
	require.Equal(t, `title \x1b]0;pwned\x07`+"\n\tcode"+`\x7f`+" é", out.String())
}

// TestExportAllRevisionsBoundedMemory exports every revision of a session
// of many revisions: the output is far larger than what the export holds
// in memory at any time, which stays near one snapshot.
func TestExportAllRevisionsBoundedMemory(t *testing.T) {
	ctx := context.Background()
	st, err := jsonlstore.Open(t.TempDir(), jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	s := sessiontest.InState("long", session.StateIdle)
	const revisions = 1000
	body := strings.Repeat("a line of the conversation, ", 5) // ~140 B
	seq := func(yield func(*session.Session, error) bool) {
		for i := range revisions {
			if err := s.AppendMessage(session.TextMessage(session.RoleUser, body, sessiontest.Epoch.Add(time.Duration(i)*time.Second))); err != nil {
				yield(nil, err)
				return
			}
			if !yield(s, nil) {
				return
			}
		}
	}
	w, err := sessionstore.CreateHistory(ctx, st, sessionstore.Snapshots(seq), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	rec, err := st.Load(ctx, "long")
	require.NoError(t, err)
	final := int64(len(mustMarshal(t, rec)))

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	mw := &memWriter{every: 100}
	require.NoError(t, exportAs(ctx, st, "long", "snapshot", true, mw))
	require.Equal(t, revisions, mw.lines)
	require.Greater(t, mw.bytes, 500*final, "the history spelled out is hundreds of snapshots")
	peak := int64(mw.peak) - int64(base.HeapAlloc)
	t.Logf("wrote %d MiB; final snapshot %d KiB; peak heap above the start %d MiB", mw.bytes>>20, final>>10, peak>>20)
	require.Less(t, peak, 64*final+16<<20, "memory stays near a snapshot's size, not the output's")
	require.Less(t, peak, mw.bytes/4)
}

func mustMarshal(t *testing.T, rec sessionstore.Record) []byte {
	b, err := json.Marshal(rec.Snapshot)
	require.NoError(t, err)
	return b
}

// memWriter counts what is written and samples the heap every so many
// lines.
type memWriter struct {
	every, lines int
	bytes        int64
	peak         uint64
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.bytes += int64(len(p))
	n := bytes.Count(p, []byte{'\n'})
	if (w.lines+n)/w.every != w.lines/w.every {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.peak = max(w.peak, ms.HeapAlloc)
	}
	w.lines += n
	return len(p), nil
}
