package importtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// EnvTranscripts names the directory of real transcripts when it is not at
// its usual place beside the repository (../shared/transcripts).
const EnvTranscripts = "SESSIONSTORE_TRANSCRIPTS"

// Transcripts returns the directory of real transcripts, given its path
// relative to the calling package, or skips the test saying where it
// looked.
func Transcripts(tb testing.TB, rel string) string {
	tb.Helper()
	d := Lookup(rel)
	if d == "" {
		tb.Skipf("no real transcripts: neither %s nor $%s is a directory", rel, EnvTranscripts)
	}
	return d
}

// Lookup returns the directory of real transcripts ($SESSIONSTORE_TRANSCRIPTS,
// else rel), or "" when there is none: for fuzz targets, which seed from the
// real files when they are there and run without them.
func Lookup(rel string) string {
	for _, d := range []string{os.Getenv(EnvTranscripts), rel} {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return ""
}

// Corpus returns the directory of real transcripts a test imports, given
// the repository's root relative to the calling package: the full
// collection when it is there (Lookup of root/../shared/transcripts), else
// the beginnings of its files committed in root/testdata/transcripts
// (SOURCES.md there), so that the test reads real files wherever it runs.
// full says which it is.
func Corpus(tb testing.TB, root string) (dir string, full bool) {
	tb.Helper()
	if d := Lookup(filepath.Join(root, "..", "shared", "transcripts")); d != "" {
		return d, true
	}
	d := filepath.Join(root, "testdata", "transcripts")
	fi, err := os.Stat(d)
	require.NoError(tb, err, "the committed transcripts")
	require.True(tb, fi.IsDir())
	return d, false
}

// Seeds adds to f pieces of every file under dir matching globs (a few
// lines from each of several places), when dir is not "". Pieces above
// 16 KiB are left out: the fuzzer mutates small inputs fast and large ones
// hardly at all.
func Seeds(f *testing.F, dir string, globs ...string) {
	if dir == "" {
		return
	}
	for _, path := range Files(f, dir, globs...) {
		data, err := os.ReadFile(path)
		require.NoError(f, err)
		lines := bytes.SplitAfter(data, []byte("\n"))
		for i := 0; i < len(lines); i += max(1, len(lines)/24) {
			if piece := bytes.Join(lines[i:min(len(lines), i+4)], nil); len(piece) <= 16<<10 {
				f.Add(piece)
			}
		}
	}
}

// Files returns the files under dir whose names match glob (filepath.Glob
// patterns, relative to dir), sorted, or fails the test if there are none.
func Files(tb testing.TB, dir string, globs ...string) []string {
	tb.Helper()
	var out []string
	for _, g := range globs {
		m, err := filepath.Glob(filepath.Join(dir, g))
		require.NoError(tb, err)
		out = append(out, m...)
	}
	require.NotEmpty(tb, out, "no files %v in %s", globs, dir)
	return out
}

// Env is the environment imported test sessions run in.
var Env = session.EnvironmentRef{Provider: "import", ID: "test", Revision: "1"}

// Build imports t into a fresh session, checking the revisions: the
// conversation only grows, and the first, the last and every revision
// whose number is a power of two encode, decode and encode again to the
// same bytes (checking them all would cost the square of a long session).
// It returns the last revision's session and the number of revisions.
func Build(tb testing.TB, t *importer.Transcript) (*session.Session, int) {
	tb.Helper()
	var last *session.Session
	n, prevLen := 0, 0
	check := func(s *session.Session) {
		b, err := sessnap.Encode(s)
		require.NoError(tb, err, "revision %d encodes", n)
		back, err := sessnap.Decode(b)
		require.NoError(tb, err, "revision %d decodes", n)
		again, err := sessnap.Encode(back)
		require.NoError(tb, err)
		require.Equal(tb, string(b), string(again), "revision %d round-trips", n)
	}
	for s, err := range t.Revisions(t.Config(t.SessionID(), Env)) {
		require.NoError(tb, err)
		n++
		require.GreaterOrEqual(tb, s.MessageCount(), prevLen, "the conversation only grows")
		if n&(n-1) == 0 {
			check(s)
		}
		prevLen, last = s.MessageCount(), s
	}
	if n == 0 {
		s, err := session.New(t.Config(t.SessionID(), Env))
		require.NoError(tb, err)
		last = s
	}
	check(last)
	require.Equal(tb, session.StateIdle, last.State(), "an import ends between turns")
	return last, n
}

// SameConversation fails the test unless a and b hold equal messages
// (session.Message.Equal), naming the first that differs.
func SameConversation(tb testing.TB, a, b []session.Message, what string) {
	tb.Helper()
	require.Len(tb, b, len(a), "%s: message count", what)
	for i := range a {
		if !a[i].Equal(b[i]) {
			tb.Fatalf("%s: message %d differs: %s", what, i, firstDifference(a[i], b[i]))
		}
	}
}

// firstDifference names the first field in which two messages differ,
// with both values cut short: messages can hold megabytes.
func firstDifference(a, b session.Message) string {
	show := func(v any) string {
		s := fmt.Sprintf("%+v", v)
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		return s
	}
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range av.NumField() {
		name := av.Type().Field(i).Name
		if name == "Parts" {
			continue
		}
		x, y := av.Field(i).Interface(), bv.Field(i).Interface()
		if !reflect.DeepEqual(x, y) {
			return name + ": " + show(x) + " vs " + show(y)
		}
	}
	if len(a.Parts) != len(b.Parts) {
		return fmt.Sprintf("%d parts vs %d", len(a.Parts), len(b.Parts))
	}
	for j := range a.Parts {
		pa, pb := reflect.ValueOf(a.Parts[j]), reflect.ValueOf(b.Parts[j])
		for i := range pa.NumField() {
			x, y := pa.Field(i).Interface(), pb.Field(i).Interface()
			if !reflect.DeepEqual(x, y) {
				if r, ok := x.(json.RawMessage); ok {
					x, y = string(r), string(y.(json.RawMessage))
				}
				return fmt.Sprintf("part %d %s: %s vs %s", j, pa.Type().Field(i).Name, show(x), show(y))
			}
		}
	}
	return "equal field by field (times or JSON that Equal compares by value)"
}

// Damaged returns damaged copies of a JSONL source, by name: the last
// line torn halfway (no newline), CRLF line endings, a line of garbage in
// the middle, and the last third of the lines written twice. want says
// which skip reason each one's report must show (empty: none).
func Damaged(src []byte) (copies map[string][]byte, want map[string]importer.Reason) {
	lines := bytes.SplitAfter(bytes.TrimSuffix(src, []byte("\n")), []byte("\n"))
	for i := range lines {
		lines[i] = bytes.TrimSuffix(lines[i], []byte("\n"))
	}
	join := func(ls [][]byte, sep string) []byte { return append(bytes.Join(ls, []byte(sep)), sep...) }
	copies, want = map[string][]byte{}, map[string]importer.Reason{}

	last := lines[len(lines)-1]
	torn := append(join(lines[:len(lines)-1], "\n"), last[:len(last)/2]...)
	copies["torn-last-line"], want["torn-last-line"] = torn, importer.SkipTorn

	copies["crlf"], want["crlf"] = join(lines, "\r\n"), ""

	mid := len(lines) / 2
	garbage := append(append(append([][]byte{}, lines[:mid]...), []byte(`{"type": oops this is not JSON`)), lines[mid:]...)
	copies["garbage-line"], want["garbage-line"] = join(garbage, "\n"), importer.SkipInvalidJSON

	tail := lines[len(lines)-max(1, len(lines)/3):]
	copies["duplicated-tail"], want["duplicated-tail"] = join(append(append([][]byte{}, lines...), tail...), "\n"), importer.SkipDuplicate
	return copies, want
}

// RoundTrip builds first into a session, writes it with write, reads the
// output back with parse and checks that the same session comes back:
// the conversation, source, title, workspace, mode, usage and counters;
// that everything written is used; and that writing twice gives the same
// bytes. It returns what parse read and the bytes written.
func RoundTrip(tb testing.TB, first *importer.Transcript, write func(io.Writer, *session.Session) error,
	parse func(testing.TB, []byte) *importer.Transcript) (*importer.Transcript, []byte) {
	tb.Helper()
	s, _ := Build(tb, first)
	var out, twice bytes.Buffer
	require.NoError(tb, write(&out, s))
	require.NoError(tb, write(&twice, s))
	require.Equal(tb, out.String(), twice.String(), "written twice, the same bytes")

	again := parse(tb, out.Bytes())
	require.True(tb, again.Report.Balanced())
	require.Empty(tb, again.Report.Dropped, "nothing written is dropped")
	SameConversation(tb, first.Messages, again.Messages, "after a round trip")
	require.Equal(tb, first.SourceID, again.SourceID)
	require.Equal(tb, first.AgentID, again.AgentID)
	require.Equal(tb, first.Title, again.Title)
	require.Equal(tb, first.TitleProvenance, again.TitleProvenance)
	require.Equal(tb, first.Workspace, again.Workspace)
	require.Equal(tb, first.ModelID, again.ModelID)
	require.Equal(tb, first.Link != nil, again.Link != nil)
	s2, _ := Build(tb, again)
	require.Equal(tb, s.Mode(), s2.Mode())
	require.Equal(tb, s.Usage(), s2.Usage())
	require.Equal(tb, s.Counters(), s2.Counters())
	return again, out.Bytes()
}

// tally is what a session's conversation holds, counted as CheckClaudeCode
// and CheckCodex compare it with what the source file holds.
type tally struct {
	roles map[session.Role]int
	// calls are the tool calls' IDs in order, a provider-executed call
	// (a web search) as "web"; ownCalls only those the client ran.
	calls, ownCalls []string
	results         []string // the tool results' call IDs in order
	// images and imageBytes count the image parts, those of tool results
	// included; texts counts the assistant's text parts.
	reasoning, encrypted, texts, images, imageBytes int
	compactions, structured, failures, injected     int
	usage                                           session.Usage // the messages' usage summed
}

// tallyOf counts what conv holds.
func tallyOf(conv []session.Message) tally {
	n := tally{roles: map[session.Role]int{}}
	for _, m := range conv {
		n.roles[m.Role]++
		if m.Usage != nil {
			n.usage = n.usage.Add(*m.Usage)
		}
		if m.Compaction != nil {
			n.compactions++
		}
		if m.Injected {
			n.injected++
		}
		for _, p := range m.Parts {
			switch p.Type {
			case session.PartToolCall:
				if p.ProviderExecuted {
					n.calls = append(n.calls, "web")
				} else {
					n.calls = append(n.calls, p.ToolCallID)
					n.ownCalls = append(n.ownCalls, p.ToolCallID)
				}
			case session.PartToolResult:
				n.results = append(n.results, p.ToolCallID)
				if len(p.Result) > 0 {
					n.structured++
				}
				if p.IsError {
					n.failures++
				}
				for _, c := range p.Content {
					if c.Type == session.PartImage {
						n.images++
						n.imageBytes += len(c.Data)
					}
				}
			case session.PartReasoning:
				n.reasoning++
				if p.Encrypted != "" {
					n.encrypted++
				}
			case session.PartImage:
				n.images++
				n.imageBytes += len(p.Data)
			case session.PartText:
				if m.Role == session.RoleAssistant {
					n.texts++
				}
			}
		}
	}
	return n
}

// CheckPairing fails the test unless every tool result in conv answers a
// tool call made before it.
func CheckPairing(tb testing.TB, conv []session.Message) {
	tb.Helper()
	called := map[string]bool{}
	for _, m := range conv {
		for _, p := range m.Parts {
			switch p.Type {
			case session.PartToolCall:
				called[p.ToolCallID] = true
			case session.PartToolResult:
				require.True(tb, called[p.ToolCallID], "result for %s without an earlier call", p.ToolCallID)
			}
		}
	}
}
