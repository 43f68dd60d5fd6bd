package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/importer/ingest"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

// newStore opens a file store in a temporary directory that is verified
// when the test ends: every record of every session checks out.
func newStore(t *testing.T) *jsonlstore.Store {
	t.Helper()
	st, err := jsonlstore.Open(t.TempDir(), jsonlstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() {
		rep, err := sessionstore.Verify(context.Background(), st)
		require.NoError(t, err)
		for _, s := range rep.Sessions {
			require.True(t, s.OK(), "session %s verifies: %+v", s.ID, s)
		}
		require.NoError(t, st.Close())
	})
	return st
}

// corpus is the real transcripts (the full collection, or the committed
// beginnings of its files) by tool.
func corpus(t *testing.T) map[string]string {
	dir, _ := importtest.Corpus(t, "../..")
	return map[string]string{ingest.ClaudeCode: filepath.Join(dir, "claude-code"), ingest.Codex: filepath.Join(dir, "codex")}
}

// fingerprint is what a file is: its content's hash and its times.
type fingerprint struct {
	sum  [32]byte
	mod  time.Time
	size int64
}

// fingerprints returns the fingerprint of every file under dir.
func fingerprints(t *testing.T, dir string) map[string]fingerprint {
	out := map[string]fingerprint{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		fi, err := d.Info()
		require.NoError(t, err)
		out[p] = fingerprint{sha256.Sum256(data), fi.ModTime(), fi.Size()}
		return nil
	}))
	return out
}

func run(t *testing.T, st sessionstore.Store, tool string, paths []string, opts ingest.Options) *ingest.Report {
	t.Helper()
	rep, err := ingest.Run(context.Background(), st, tool, paths, opts)
	require.NoError(t, err)
	return rep
}

// storedSessions loads every session of st imported from tool.
func storedSessions(t *testing.T, st sessionstore.Store, tool string) map[session.SessionID]*session.Session {
	ctx := context.Background()
	out := map[session.SessionID]*session.Session{}
	page, err := st.List(ctx, summary.Query{Limit: summary.MaxLimit})
	require.NoError(t, err)
	require.Empty(t, page.Next)
	for _, it := range page.Items {
		if it.Origin == nil || it.Origin.Tool != tool {
			continue
		}
		rec, err := st.Load(ctx, it.ID)
		require.NoError(t, err)
		s, err := rec.Session()
		require.NoError(t, err)
		out[it.ID] = s
	}
	return out
}

// checkAgainstSources checks every session imported from a file of its
// own (a main transcript, a sub-agent's file) against that file read
// independently: messages, roles, tool-call pairing, images, usage.
func checkAgainstSources(t *testing.T, tool string, sessions map[session.SessionID]*session.Session) {
	checked := 0
	for id, s := range sessions {
		o := s.Origin()
		if o.AgentID != "" && tool == ingest.ClaudeCode && !strings.Contains(filepath.Base(o.Path), o.AgentID) {
			continue // a 1.0 sidechain: it shares its parent's file
		}
		data, err := os.ReadFile(o.Path)
		require.NoError(t, err, "session %s names its source", id)
		require.Equal(t, int64(len(data)), o.Bytes)
		require.Equal(t, int64(bytes.Count(data, []byte("\n"))), o.Lines)
		switch tool {
		case ingest.ClaudeCode:
			importtest.CheckClaudeCode(t, importtest.ReadClaudeCode(t, data), s)
		case ingest.Codex:
			importtest.CheckCodex(t, importtest.ReadCodex(data), s)
		}
		checked++
	}
	require.Positive(t, checked)
}

// TestImportRealTranscripts is the round trip: every real transcript is
// imported into a file store and checked against its source read
// independently; importing again reads nothing and writes nothing; the
// sources are never changed; each session can be resumed and forked;
// written back in its tool's format and imported into another store, it
// is the same conversation.
func TestImportRealTranscripts(t *testing.T) {
	ctx := context.Background()
	for tool, dir := range corpus(t) {
		t.Run(tool, func(t *testing.T) {
			before := fingerprints(t, dir)
			st := newStore(t)
			rep := run(t, st, tool, []string{dir}, ingest.Options{})
			require.Zero(t, rep.Totals.Failed, "%+v", rep.Sources)
			require.Equal(t, rep.Totals.Sources, rep.Totals.Read)
			require.Positive(t, rep.Totals.Sessions[ingest.ActionCreated])
			require.Equal(t, rep.Totals.Sessions[ingest.ActionCreated], len(rep.Sessions()))
			for _, src := range rep.Sources {
				require.True(t, src.Read.Balanced(), "%s: every line counted once", src.Path)
				require.Equal(t, sizeOf(t, src.Path), src.Read.Bytes-filesBytes(t, src.Files[min(1, len(src.Files)):]))
			}
			sessions := storedSessions(t, st, tool)
			require.Len(t, sessions, rep.Totals.Sessions[ingest.ActionCreated])
			checkAgainstSources(t, tool, sessions)
			for id, s := range sessions {
				if rel := s.Relationship(); s.Kind() == session.KindSubagent {
					require.Contains(t, sessions, rel.ParentID, "sub-agent %s hangs off its parent's session", id)
					require.Equal(t, rel.ParentID, rel.RootID)
				}
			}

			again := run(t, st, tool, []string{dir}, ingest.Options{})
			require.Equal(t, again.Totals.Sources, again.Totals.Unchanged, "a second import reads nothing")
			require.Zero(t, again.Totals.Revisions)
			require.Zero(t, again.Totals.Bytes)
			require.Equal(t, rep.Totals.Lines, recordedLines(again))
			require.Len(t, storedSessions(t, st, tool), len(sessions), "nothing duplicated")
			require.Equal(t, before, fingerprints(t, dir), "the sources are never changed")

			for id := range sessions {
				// Resume: another holder continues the imported session.
				w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "agent"})
				require.NoError(t, err)
				rec, err := st.Load(ctx, id)
				require.NoError(t, err)
				s, err := rec.Session()
				require.NoError(t, err)
				require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "and now?", time.Now().UTC())))
				snap := sessiontest.Snap(t, s)
				_, err = w.Append(ctx, w.Revision(), snap)
				require.NoError(t, err)
				require.NoError(t, w.Release(ctx))
				// Fork: a new session from the imported one's first revision.
				fw, err := st.Fork(ctx, id, 1, "", sessionstore.AcquireOptions{})
				require.NoError(t, err)
				forked, err := st.Load(ctx, fw.ID())
				require.NoError(t, err)
				require.Equal(t, id, forked.Snapshot.Relationship.ParentID)
				require.Nil(t, forked.Snapshot.Origin, "a fork is not an import of the source")
				require.NoError(t, fw.Release(ctx))
			}
		})
	}
}

func filesBytes(t *testing.T, paths []string) int64 {
	var n int64
	for _, p := range paths {
		n += sizeOf(t, p)
	}
	return n
}

func sizeOf(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Size()
}

func recordedLines(rep *ingest.Report) int64 {
	var n int64
	for _, s := range rep.Sources {
		n += s.Read.Lines
	}
	return n
}

// TestExportBackAndImportAgain writes every imported session back in its
// tool's format, laid out as the tool lays out its files, and imports
// those into another store: the same conversations.
func TestExportBackAndImportAgain(t *testing.T) {
	for tool, dir := range corpus(t) {
		t.Run(tool, func(t *testing.T) {
			st := newStore(t)
			run(t, st, tool, []string{dir}, ingest.Options{})
			first := storedSessions(t, st, tool)
			out := t.TempDir()
			for _, s := range first {
				if s.Kind() == session.KindSubagent {
					continue // written with their parents below
				}
				var b bytes.Buffer
				var name string
				switch tool {
				case ingest.ClaudeCode:
					require.NoError(t, claudecode.Write(&b, s, claudecode.WriteOptions{}))
					name = filepath.Join("project", s.Origin().SessionID+".jsonl")
					for _, c := range first {
						if c.Relationship().ParentID == s.ID() && c.Origin().AgentID != "" {
							var cb bytes.Buffer
							require.NoError(t, claudecode.Write(&cb, c, claudecode.WriteOptions{
								SessionID: s.Origin().SessionID, AgentID: c.Origin().AgentID}))
							writeFile(t, filepath.Join(out, "project", s.Origin().SessionID, "subagents", "agent-"+c.Origin().AgentID+".jsonl"), cb.Bytes())
						}
					}
				case ingest.Codex:
					require.NoError(t, codex.Write(&b, s, codex.WriteOptions{}))
					name = filepath.Join("2026", "01", "01", "rollout-2026-01-01T00-00-00-"+s.Origin().SessionID+".jsonl")
				}
				writeFile(t, filepath.Join(out, name), b.Bytes())
			}
			other := newStore(t)
			rep := run(t, other, tool, []string{out}, ingest.Options{})
			require.Zero(t, rep.Totals.Failed, "%+v", rep.Sources)
			second := storedSessions(t, other, tool)
			require.Len(t, second, len(first))
			for id, s := range first {
				again, ok := second[id]
				require.True(t, ok, "session %s imported again", id)
				importtest.SameConversation(t, s.Conversation(), again.Conversation(), string(id))
				require.Equal(t, s.Usage(), again.Usage())
				require.Equal(t, s.Counters(), again.Counters())
				require.Equal(t, s.Relationship().ParentID, again.Relationship().ParentID)
			}
		})
	}
}

func writeFile(t *testing.T, p string, data []byte) {
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// TestDamagedCopiesImport imports hand-damaged copies of every real
// transcript (a torn last line, CRLF endings, a line of garbage, a
// duplicated tail), each into a store of its own: every one imports, the
// damage is counted in the report, and the conversation is the clean
// copy's (without the torn line's message, for a torn copy).
func TestDamagedCopiesImport(t *testing.T) {
	for tool, dir := range corpus(t) {
		var files []string
		require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") && !strings.HasPrefix(d.Name(), "agent-") {
				files = append(files, p)
			}
			return err
		}))
		require.NotEmpty(t, files)
		for _, path := range files {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			copies, want := importtest.Damaged(data)
			for name, damaged := range copies {
				t.Run(tool+"/"+filepath.Base(path)+"/"+name, func(t *testing.T) {
					p := filepath.Join(t.TempDir(), filepath.Base(path))
					writeFile(t, p, damaged)
					st := newStore(t)
					rep := run(t, st, tool, []string{p}, ingest.Options{})
					require.Zero(t, rep.Totals.Failed, "%+v", rep.Sources)
					require.Len(t, rep.Sources, 1)
					src := rep.Sources[0]
					require.Equal(t, int64(len(damaged)), src.Read.Bytes)
					require.True(t, src.Read.Balanced())
					if reason := want[name]; reason != "" {
						require.Positive(t, src.Read.Skipped[reason], "the damage is reported as %s: %+v", reason, src.Read.Skipped)
						require.Positive(t, rep.Totals.Skipped[reason])
					}
					if name == "crlf" || name == "duplicated-tail" || name == "garbage-line" {
						clean := newStore(t)
						run(t, clean, tool, []string{path}, ingest.Options{})
						a, b := storedSessions(t, clean, tool), storedSessions(t, st, tool)
						require.NotEmpty(t, b)
						for id, s := range b { // the copy's sub-agents' files are not beside it
							importtest.SameConversation(t, a[id].Conversation(), s.Conversation(), name)
						}
					}
				})
			}
		}
	}
}

// TestReimportContinuesAndRefuses: a source that grew appends only its
// new steps; one rewritten is reported as diverged and changes nothing;
// a session someone holds is left alone and reported; a dry run writes
// nothing.
func TestReimportContinuesAndRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	id, data := importtest.GenerateClaudeCode(7, 40<<10)
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := len(lines) / 2
	for !bytes.Contains(lines[cut], []byte(`"message":{"content":"`)) {
		cut++ // the source as written between two turns
	}
	half := bytes.Join(lines[:cut], nil)
	path := filepath.Join(dir, "project", id+".jsonl")
	writeFile(t, path, half)
	st := newStore(t)

	dry := run(t, st, ingest.ClaudeCode, []string{dir}, ingest.Options{DryRun: true})
	require.True(t, dry.DryRun)
	require.Equal(t, 1, dry.Totals.Sessions[ingest.ActionCreated])
	require.Positive(t, dry.Totals.Revisions)
	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "a dry run writes nothing")

	rep := run(t, st, ingest.ClaudeCode, []string{dir}, ingest.Options{})
	require.Equal(t, dry.Totals.Revisions, rep.Totals.Revisions, "the dry run said what the import did")
	sid := rep.Sessions()[0].ID
	rec, err := st.Load(ctx, sid)
	require.NoError(t, err)
	firstRev := rec.Revision

	writeFile(t, path, data) // the source grew
	grown := run(t, st, ingest.ClaudeCode, []string{dir}, ingest.Options{})
	require.Equal(t, 1, grown.Totals.Sessions[ingest.ActionUpdated])
	rec, err = st.Load(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, firstRev+uint64(grown.Totals.Revisions), rec.Revision)
	fresh := newStore(t)
	run(t, fresh, ingest.ClaudeCode, []string{dir}, ingest.Options{})
	want := storedSessions(t, fresh, ingest.ClaudeCode)[sid]
	got := storedSessions(t, st, ingest.ClaudeCode)[sid]
	importtest.SameConversation(t, want.Conversation(), got.Conversation(), "grown import")
	require.Equal(t, want.Usage(), got.Usage())
	require.Equal(t, want.Counters(), got.Counters())

	w, err := st.Acquire(ctx, sid, sessionstore.AcquireOptions{Label: "someone"})
	require.NoError(t, err)
	writeFile(t, path, append(append([]byte{}, data...), []byte(`{"type":"user","uuid":"new-1","sessionId":"`+id+`","timestamp":"2026-05-01T00:00:00Z","message":{"role":"user","content":"more"}}`+"\n")...))
	held := run(t, st, ingest.ClaudeCode, []string{dir}, ingest.Options{})
	require.Equal(t, 1, held.Totals.Failed)
	require.ErrorContains(t, errorOf(held), "held")
	require.NoError(t, w.Release(ctx))

	rewritten := bytes.Replace(data, []byte(`"content":"`), []byte(`"content":"rewritten `), 1)
	writeFile(t, path, rewritten)
	div := run(t, st, ingest.ClaudeCode, []string{dir}, ingest.Options{})
	require.Equal(t, 1, div.Totals.Sessions[ingest.ActionDiverged])
	require.Equal(t, 1, div.Totals.Failed)
	after, err := st.Load(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, rec.Revision, after.Revision, "a diverged source writes nothing")
}

type sessionError string

func (e sessionError) Error() string { return string(e) }

func errorOf(rep *ingest.Report) error {
	for _, s := range rep.Sessions() {
		if s.Error != "" {
			return sessionError(s.Error)
		}
	}
	return nil
}

// TestGeneratedCorpus imports generated sessions of both tools: each
// session once, none on a second run, the report adding up.
func TestGeneratedCorpus(t *testing.T) {
	dir := t.TempDir()
	n, err := importtest.WriteCorpus(dir, 12, 6)
	require.NoError(t, err)
	st := newStore(t)
	var read int64
	for _, tool := range []string{ingest.ClaudeCode, ingest.Codex} {
		rep := run(t, st, tool, []string{filepath.Join(dir, tool)}, ingest.Options{})
		require.Zero(t, rep.Totals.Failed)
		require.Equal(t, rep.Totals.Sources, rep.Totals.Sessions[ingest.ActionCreated])
		read += rep.Totals.Bytes
		sessions := storedSessions(t, st, tool)
		require.Len(t, sessions, rep.Totals.Sources)
		checkAgainstSources(t, tool, sessions)
		again := run(t, st, tool, []string{filepath.Join(dir, tool)}, ingest.Options{})
		require.Equal(t, again.Totals.Sources, again.Totals.Unchanged)
	}
	require.Equal(t, n, read)
}

// TestProgress: the progress callback sees the plan, then every source.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	_, err := importtest.WriteCorpus(dir, 5, 0)
	require.NoError(t, err)
	var seen []ingest.Progress
	run(t, newStore(t), ingest.ClaudeCode, []string{filepath.Join(dir, ingest.ClaudeCode)}, ingest.Options{Progress: func(p ingest.Progress) { seen = append(seen, p) }})
	require.Len(t, seen, 6)
	require.Zero(t, seen[0].SourcesDone)
	last := seen[len(seen)-1]
	require.Equal(t, 5, last.Sources)
	require.Equal(t, last.Sources, last.SourcesDone)
	require.Equal(t, last.Bytes, last.BytesDone)
}

func TestRunErrors(t *testing.T) {
	st := newStore(t)
	_, err := ingest.Run(context.Background(), st, "cursor", nil, ingest.Options{})
	require.ErrorIs(t, err, ingest.ErrUnknownTool)
	_, err = ingest.Run(context.Background(), st, ingest.Codex, []string{filepath.Join(t.TempDir(), "missing")}, ingest.Options{})
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestOtherToolsFile: every real transcript of one tool, imported as the
// other's, fails naming the tool it reads as, and writes nothing; a file
// of unknown JSON objects fails without a hint; an empty file and one of
// broken lines are not another tool's (they import as empty).
func TestOtherToolsFile(t *testing.T) {
	c := corpus(t)
	for tool, other := range map[string]string{ingest.ClaudeCode: ingest.Codex, ingest.Codex: ingest.ClaudeCode} {
		st := newStore(t)
		rep := run(t, st, other, []string{c[tool]}, ingest.Options{})
		require.NotEmpty(t, rep.Sources, tool)
		failed := 0
		for _, src := range rep.Sources {
			if src.Status != ingest.StatusFailed {
				continue // a file the other tool reads too (none in the corpus today)
			}
			failed++
			require.Contains(t, src.Error, ingest.ErrOtherTool.Error(), src.Path)
			require.Contains(t, src.Error, fmt.Sprintf("it reads as a %s transcript: 'sessions import %s'", tool, tool), src.Path)
		}
		require.Equal(t, len(rep.Sources), failed, "%s's files imported as %s's", tool, other)
		page, err := st.List(context.Background(), summary.Query{})
		require.NoError(t, err)
		require.Empty(t, page.Items, "nothing is written")
	}

	dir := t.TempDir()
	files := map[string]string{
		"unknown.jsonl": `{"kind":"x"}` + "\n" + `{"type":"mystery","n":1}` + "\n",
		"empty.jsonl":   "",
		"broken.jsonl":  "not json\n{\"type\":\n",
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	for _, tool := range []string{ingest.ClaudeCode, ingest.Codex} {
		for name := range files {
			rep := run(t, newStore(t), tool, []string{filepath.Join(dir, name)}, ingest.Options{})
			require.Len(t, rep.Sources, 1)
			src := rep.Sources[0]
			if name != "unknown.jsonl" {
				require.Equal(t, ingest.StatusRead, src.Status, "%s as %s: %s", name, tool, src.Error)
				continue
			}
			require.Equal(t, ingest.StatusFailed, src.Status, "%s as %s", name, tool)
			require.Contains(t, src.Error, ingest.ErrOtherTool.Error())
			require.NotContains(t, src.Error, "reads as", "no tool reads it")
		}
	}
}
