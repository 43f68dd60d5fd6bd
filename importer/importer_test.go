package importer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

func TestLineReader(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		max       int
		wantLines []string
		wantFinal []bool
		wantLong  []bool
	}{
		{name: "empty", in: ""},
		{name: "lines", in: "a\nb\n", wantLines: []string{"a", "b"}, wantFinal: []bool{false, false}, wantLong: []bool{false, false}},
		{name: "no final newline", in: "a\nb", wantLines: []string{"a", "b"}, wantFinal: []bool{false, true}, wantLong: []bool{false, false}},
		{name: "crlf", in: "a\r\nb\r\n", wantLines: []string{"a", "b"}, wantFinal: []bool{false, false}, wantLong: []bool{false, false}},
		{name: "byte order mark", in: "\ufeffa\n\ufeffb\n", wantLines: []string{"a", "\ufeffb"}, wantFinal: []bool{false, false}, wantLong: []bool{false, false}},
		{name: "blank lines", in: "\n\n", wantLines: []string{"", ""}, wantFinal: []bool{false, false}, wantLong: []bool{false, false}},
		{name: "too long", in: "abcdef\nab\nabcdefgh", max: 4, wantLines: []string{"", "ab", ""}, wantFinal: []bool{false, false, true}, wantLong: []bool{true, false, true}},
		{name: "long line under the limit", in: strings.Repeat("x", 200_000) + "\n", max: 300_000,
			wantLines: []string{strings.Repeat("x", 200_000)}, wantFinal: []bool{false}, wantLong: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte a read: lines span reads.
			lr := importer.NewLineReader(iotest.OneByteReader(strings.NewReader(tt.in)), tt.max)
			var lines []string
			var final, long []bool
			for lr.Next() {
				l := lr.Line()
				require.Equal(t, int64(len(lines)+1), l.No)
				lines, final, long = append(lines, string(l.Data)), append(final, l.Final), append(long, l.TooLong)
			}
			require.NoError(t, lr.Err())
			require.Equal(t, tt.wantLines, lines)
			require.Equal(t, tt.wantFinal, final)
			require.Equal(t, tt.wantLong, long)
			var r importer.Report
			lr.Fill(&r)
			require.Equal(t, int64(len(tt.in)), r.Bytes)
			require.Equal(t, int64(len(lines)), r.Lines)
			require.Len(t, r.SHA256, 64)
		})
	}
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		lr := importer.NewLineReader(io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(boom)), 0)
		require.True(t, lr.Next())
		require.False(t, lr.Next())
		require.ErrorIs(t, lr.Err(), boom)
	})
}

func TestLineDecode(t *testing.T) {
	tests := []struct {
		name     string
		line     importer.Line
		wantOK   bool
		wantSkip importer.Reason
	}{
		{name: "object", line: importer.Line{Data: []byte(`{"type":"user"}`)}, wantOK: true},
		{name: "final object", line: importer.Line{Data: []byte(`{"type":"user"}`), Final: true}, wantOK: true},
		{name: "too long", line: importer.Line{TooLong: true}, wantSkip: importer.SkipTooLong},
		{name: "white space", line: importer.Line{Data: []byte(" \t")}, wantSkip: importer.SkipEmpty},
		{name: "invalid", line: importer.Line{Data: []byte(`{"type":`)}, wantSkip: importer.SkipInvalidJSON},
		{name: "torn", line: importer.Line{Data: []byte(`{"type":`), Final: true}, wantSkip: importer.SkipTorn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r importer.Report
			var v struct {
				Type string `json:"type"`
			}
			require.Equal(t, tt.wantOK, tt.line.Decode(&r, &v))
			if tt.wantOK {
				require.Equal(t, "user", v.Type)
				require.Empty(t, r.Skipped)
				return
			}
			require.Equal(t, map[importer.Reason]int64{tt.wantSkip: 1}, r.Skipped)
		})
	}
}

func TestReportAddsUp(t *testing.T) {
	var r importer.Report
	r.Lines = 6
	r.Use()
	r.Merge()
	r.Skip(importer.SkipNotConversation, "progress")
	r.Skip(importer.SkipUnknownType, "future")
	r.Skip(importer.SkipDuplicate, "ignored for this reason")
	require.False(t, r.Balanced())
	r.Skip(importer.SkipTorn, "")
	require.True(t, r.Balanced())
	require.Equal(t, map[string]int64{"progress": 1, "future": 1}, r.SkippedTypes)
	var total importer.Report
	total.Add(r)
	total.Add(r)
	require.Equal(t, int64(12), total.Lines)
	require.Equal(t, int64(2), total.Merged)
	require.Equal(t, int64(8), total.SkippedTotal())
	require.True(t, total.Balanced())
}

// conversation builds a Claude Code transcript of n prompts, each answered
// by a tool call, its result and a reply.
func conversation(n int) string {
	var b strings.Builder
	for i := range n {
		ts := fmt.Sprintf("2026-01-02T03:%02d:00Z", i)
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","sessionId":"s1","timestamp":%q,"cwd":"/src/app","gitBranch":"main","message":{"role":"user","content":"prompt %d"}}`+"\n", i, ts, i)
		fmt.Fprintf(&b, `{"type":"assistant","uuid":"a%d","sessionId":"s1","timestamp":%q,"message":{"id":"msg_%d","model":"claude","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"output_tokens":5}}}`+"\n", i, ts, i, i)
		fmt.Fprintf(&b, `{"type":"user","uuid":"r%d","sessionId":"s1","timestamp":%q,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"ok"}]}}`+"\n", i, ts, i)
		fmt.Fprintf(&b, `{"type":"assistant","uuid":"b%d","sessionId":"s1","timestamp":%q,"message":{"id":"msg_%db","model":"claude","content":[{"type":"text","text":"done %d"}],"usage":{"input_tokens":20,"output_tokens":7}}}`+"\n", i, ts, i, i)
	}
	return b.String()
}

func parseClaude(t testing.TB, src string) *importer.Transcript {
	tr, err := claudecode.Parse(strings.NewReader(src), claudecode.Options{})
	require.NoError(t, err)
	return tr
}

// TestApplyLifecycle: each prompt is a turn, usage and tool calls are
// counted, each turn's last revision is idle, and the revisions follow the
// source's steps.
func TestApplyLifecycle(t *testing.T) {
	tr := parseClaude(t, conversation(3))
	var states []session.State
	var lengths []int
	for s, err := range tr.Revisions(tr.Config("imp", importtest.Env)) {
		require.NoError(t, err)
		states, lengths = append(states, s.State()), append(lengths, s.MessageCount())
	}
	require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, lengths)
	for i, st := range states {
		want := session.StateRunning
		if i%4 == 3 {
			want = session.StateIdle
		}
		require.Equal(t, want, st, "revision %d", i+1)
	}
	s, n := importtest.Build(t, tr)
	require.Equal(t, 12, n)
	require.Equal(t, session.Counters{Turns: 3, ToolCalls: 3}, s.Counters())
	require.Equal(t, session.Usage{InputTokens: 90, OutputTokens: 36}, s.Usage())
	title, prov := s.Title()
	require.Equal(t, "prompt 0", title)
	require.Equal(t, session.TitleFirstPrompt, prov)
	require.Equal(t, session.Workspace{Project: "/src/app", Dir: "/src/app", Branch: "main"}, s.Workspace())
}

// TestReimportIsIdempotent imports into a store, then imports the same
// source again (nothing appended), a grown copy (only the new steps
// appended, ending where a fresh import of it ends), and a rewritten copy
// (refused, nothing appended).
func TestReimportIsIdempotent(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()

	importInto := func(src string) (appended int, err error) {
		tr := parseClaude(t, src)
		id := tr.SessionID()
		var w sessionstore.Writer
		var s *session.Session
		rec, err := st.Load(ctx, id)
		switch {
		case errors.Is(err, sessionstore.ErrNotFound):
			for s, err := range tr.Revisions(tr.Config(id, importtest.Env)) {
				if err != nil {
					return appended, err
				}
				snap, err := sessnap.Of(s)
				require.NoError(t, err)
				if w == nil {
					w, err = st.Create(ctx, snap, sessionstore.AcquireOptions{})
				} else {
					_, err = w.Append(ctx, w.Revision(), snap)
				}
				require.NoError(t, err)
				appended++
			}
		case err != nil:
			return 0, err
		default:
			s, err = rec.Snapshot.Restore()
			require.NoError(t, err)
			w, err = st.Acquire(ctx, id, sessionstore.AcquireOptions{})
			require.NoError(t, err)
			for s, err := range tr.Apply(s) {
				if err != nil {
					require.NoError(t, w.Release(ctx))
					return appended, err
				}
				snap, err := sessnap.Of(s)
				require.NoError(t, err)
				_, err = w.Append(ctx, w.Revision(), snap)
				require.NoError(t, err)
				appended++
			}
		}
		if w != nil {
			require.NoError(t, w.Release(ctx))
		}
		return appended, nil
	}
	latest := func(id session.SessionID) []byte {
		rec, err := st.Load(ctx, id)
		require.NoError(t, err)
		b, err := sessnap.Marshal(rec.Snapshot)
		require.NoError(t, err)
		return b
	}

	two, three := conversation(2), conversation(3)
	n, err := importInto(two)
	require.NoError(t, err)
	require.Equal(t, 8, n)
	id := parseClaude(t, two).SessionID()
	before := latest(id)

	n, err = importInto(two)
	require.NoError(t, err)
	require.Zero(t, n, "the same source again appends nothing")
	require.Equal(t, string(before), string(latest(id)))

	n, err = importInto(three)
	require.NoError(t, err)
	require.Equal(t, 4, n, "a grown source appends its new steps")
	fresh, _ := importtest.Build(t, parseClaude(t, three))
	rec, err := st.Load(ctx, id)
	require.NoError(t, err)
	grown, err := rec.Snapshot.Restore()
	require.NoError(t, err)
	importtest.SameConversation(t, fresh.Conversation(), grown.Conversation(), "grown import")
	require.Equal(t, fresh.Counters(), grown.Counters())
	require.Equal(t, fresh.Usage(), grown.Usage())
	require.Equal(t, fresh.Origin(), grown.Origin(), "the origin describes the latest read")
	require.Equal(t, uint64(12), rec.Revision)

	rewritten := strings.Replace(three, "prompt 1", "prompt one", 1)
	n, err = importInto(rewritten)
	require.ErrorIs(t, err, importer.ErrDiverged)
	require.Zero(t, n)
	rec2, err := st.Load(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rec.Revision, rec2.Revision, "a diverged source appends nothing")
}

// TestApplyKeepsAGivenTitle: a title the holder set is not replaced by the
// one a re-import derives from the source.
func TestApplyKeepsAGivenTitle(t *testing.T) {
	s, _ := importtest.Build(t, parseClaude(t, conversation(1)))
	require.NoError(t, s.SetTitle("My name for it", session.TitleExplicit))
	n := 0
	for got, err := range parseClaude(t, conversation(2)).Apply(s) {
		require.NoError(t, err)
		n++
		title, prov := got.Title()
		require.Equal(t, "My name for it", title)
		require.Equal(t, session.TitleExplicit, prov)
	}
	require.Equal(t, 4, n)
}

func TestApplyRefusesAnotherSource(t *testing.T) {
	a := parseClaude(t, conversation(1))
	s, _ := importtest.Build(t, a)
	b := parseClaude(t, strings.ReplaceAll(conversation(1), `"sessionId":"s1"`, `"sessionId":"s2"`))
	for _, err := range b.Apply(s) {
		require.ErrorIs(t, err, importer.ErrDiverged)
	}
}

// TestApplyTitleOnly: a source that gained only a title line appends one
// revision that changes the title.
func TestApplyTitleOnly(t *testing.T) {
	src := conversation(1)
	s, _ := importtest.Build(t, parseClaude(t, src))
	titled := parseClaude(t, src+`{"type":"summary","summary":"Listing files","leafUuid":"b0"}`+"\n")
	n := 0
	for got, err := range titled.Apply(s) {
		require.NoError(t, err)
		n++
		title, prov := got.Title()
		require.Equal(t, "Listing files", title)
		require.Equal(t, session.TitleGenerated, prov)
	}
	require.Equal(t, 1, n)
	for _, err := range titled.Apply(s) {
		t.Fatal("applied twice, the second time changes nothing", err)
	}
}

func TestSessionIDAndConfig(t *testing.T) {
	tr := &importer.Transcript{Tool: "claude-code", SourceID: "0d3a8e6f-290f", AgentID: "a88"}
	require.Equal(t, session.SessionID("claude-code-0d3a8e6f-290f-a88"), tr.SessionID())
	unsafe := &importer.Transcript{Tool: "codex", SourceID: "../../etc/passwd"}
	id := unsafe.SessionID()
	require.NoError(t, sessionstore.ValidateID(id))
	require.True(t, strings.HasPrefix(string(id), "codex-"))
	require.NotEqual(t, id, (&importer.Transcript{Tool: "codex", SourceID: "../../etc/shadow"}).SessionID())

	anonymous := &importer.Transcript{Tool: "codex", Report: importer.Report{SHA256: strings.Repeat("ab", 32)}}
	require.Equal(t, "sha256:"+strings.Repeat("ab", 16), anonymous.Origin().SessionID)
	cfg := anonymous.Config("x", importtest.Env)
	require.False(t, cfg.CreatedAt.IsZero(), "a transcript without times is dated at the epoch")
	_, err := session.New(cfg)
	require.NoError(t, err)
}

func TestNest(t *testing.T) {
	parent := &importer.Transcript{Tool: "codex", SourceID: "p", Spawns: map[string]importer.Spawn{"c": {ToolCallID: "call-1", Role: "worker"}}}
	child := &importer.Transcript{Tool: "codex", SourceID: "c", Link: &importer.Link{ParentSourceID: "p"}}
	orphan := &importer.Transcript{Tool: "codex", SourceID: "o", Link: &importer.Link{ParentSourceID: "missing"}}
	other := &importer.Transcript{Tool: "claude-code", SourceID: "x", Link: &importer.Link{ParentSourceID: "p"}}
	roots := importer.Nest([]*importer.Transcript{child, parent, orphan, other})
	require.Equal(t, []*importer.Transcript{parent, orphan, other}, roots)
	require.Equal(t, []*importer.Transcript{child}, parent.Children)
	require.Equal(t, importer.Link{ParentSourceID: "p", ToolCallID: "call-1", Role: "worker"}, *child.Link)
}

// Example imports a Claude Code transcript into a store, one revision per
// step of the source, then imports it again after it grew: only the new
// steps are appended.
func Example() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	env := session.EnvironmentRef{Provider: "import", ID: "laptop", Revision: "1"}

	src := `{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2026-01-02T03:04:05Z","cwd":"/src/app","message":{"role":"user","content":"List the files"}}
{"type":"assistant","uuid":"a1","sessionId":"s1","timestamp":"2026-01-02T03:04:07Z","message":{"id":"msg_1","model":"claude","content":[{"type":"text","text":"a.go b.go"}],"usage":{"input_tokens":12,"output_tokens":4}}}
`
	tr, _ := claudecode.Parse(strings.NewReader(src), claudecode.Options{})
	var w sessionstore.Writer
	for s, err := range tr.Revisions(tr.Config(tr.SessionID(), env)) {
		if err != nil {
			panic(err)
		}
		snap, _ := sessnap.Of(s)
		if w == nil {
			w, _ = st.Create(ctx, snap, sessionstore.AcquireOptions{})
		} else {
			_, _ = w.Append(ctx, w.Revision(), snap)
		}
	}
	fmt.Println(tr.SessionID(), "revision", w.Revision(), "report", tr.Report.Lines, "lines,", tr.Report.Messages, "messages")

	grown := src + `{"type":"user","uuid":"u2","sessionId":"s1","timestamp":"2026-01-02T03:05:00Z","message":{"role":"user","content":"Thanks"}}` + "\n"
	tr, _ = claudecode.Parse(bytes.NewReader([]byte(grown)), claudecode.Options{})
	rec, _ := st.Load(ctx, tr.SessionID())
	s, _ := rec.Snapshot.Restore()
	for s, err := range tr.Apply(s) {
		if err != nil {
			panic(err)
		}
		snap, _ := sessnap.Of(s)
		_, _ = w.Append(ctx, w.Revision(), snap)
	}
	rec, _ = st.Load(ctx, tr.SessionID())
	fmt.Println("revision", rec.Revision, "messages", len(rec.Snapshot.Messages), "turns", rec.Snapshot.Counters.Turns)
	// Output:
	// claude-code-s1 revision 2 report 2 lines, 2 messages
	// revision 3 messages 3 turns 2
}

// TestRevisionsHoldTheConversationOnce: replaying a transcript leaves each
// message in memory once. The session keeps its own copy of what it is
// given (raw JSON, image bytes); the transcript then shares that copy
// instead of holding its own beside it, which doubled an import's
// memory.
func TestRevisionsHoldTheConversationOnce(t *testing.T) {
	_, data := importtest.GenerateClaudeCode(3, 2<<20)
	tr, err := claudecode.Parse(bytes.NewReader(data), claudecode.Options{})
	require.NoError(t, err)
	s, _ := importtest.Build(t, tr)
	conv := s.Conversation()
	require.Len(t, conv, len(tr.Messages))
	shared := 0
	for i, m := range tr.Messages {
		for j, p := range m.Parts {
			q := conv[i].Parts[j]
			for _, pair := range [][2][]byte{{p.Input, q.Input}, {p.Data, q.Data}, {p.Result, q.Result}} {
				if len(pair[0]) > 0 {
					require.Same(t, &pair[0][0], &pair[1][0], "message %d part %d is held twice", i, j)
					shared++
				}
			}
		}
	}
	require.Positive(t, shared, "the transcript holds raw JSON or bytes to share")
}

// TestApplyContinuesASourceWithoutIDs: a source that names no ID for its
// messages (a Codex item without one) is continued across imports, though
// the session restored from the store gives the messages it appends IDs
// of their own (session.Session.MarkRestored).
func TestApplyContinuesASourceWithoutIDs(t *testing.T) {
	parse := func(n int) *importer.Transcript {
		tr := parseClaude(t, conversation(n))
		for i := range tr.Messages {
			tr.Messages[i].ID = ""
		}
		return tr
	}
	s, _ := importtest.Build(t, parse(1))
	restore := func(s *session.Session) *session.Session {
		snap, err := sessnap.Of(s)
		require.NoError(t, err)
		r, err := snap.Restore()
		require.NoError(t, err)
		return r
	}
	s = restore(s)
	n := 0
	for got, err := range parse(2).Apply(s) {
		require.NoError(t, err)
		n++
		s = got
	}
	require.Equal(t, 4, n, "the grown source's steps")
	conv := s.Conversation()
	require.Empty(t, conv[0].ID, "the first import's messages are as the source gave them")
	require.NotEmpty(t, conv[len(conv)-1].ID, "the restored session gave its new message an ID")
	s = restore(s)
	for _, err := range parse(2).Apply(s) {
		require.NoError(t, err, "the same source again is no divergence")
	}
	for _, err := range parse(3).Apply(restore(s)) {
		require.NoError(t, err, "a grown source continues")
	}
	rewritten := parse(2)
	require.Equal(t, "prompt 1", rewritten.Messages[4].Parts[0].Text)
	rewritten.Messages[4].Parts[0].Text = "rewritten"
	var errs []error
	for _, err := range rewritten.Apply(restore(s)) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], importer.ErrDiverged, "a message whose content changed diverges")
}
