package transcript_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/sessionstore/sessionstore/importer/transcript"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/session"
)

// hostile is the hostile session (importtest), whose text opens headers,
// HTML and code fences and whose single-line fields hold line breaks of
// every kind, and the texts of its messages in order.
func hostile(t *testing.T) (*session.Session, []string) {
	s := importtest.HostileSession(t, importtest.HostileMessages())
	var texts []string
	for _, m := range s.Conversation() {
		for _, p := range m.Parts {
			if p.Type == session.PartText && strings.TrimSpace(p.Text) != "" {
				texts = append(texts, p.Text)
			}
		}
	}
	return s, texts
}

// TestMarkdownKeepsStructure renders the hostile session as Markdown and
// reads it with a CommonMark parser (goldmark): one title, one section
// header per message, each on one line, the three facts the session has,
// no raw HTML anywhere, and each message's text in a code block, exactly.
func TestMarkdownKeepsStructure(t *testing.T) {
	s, texts := hostile(t)
	var b bytes.Buffer
	require.NoError(t, transcript.WriteMarkdown(&b, s, transcript.Options{}))
	md := b.Bytes()

	var html bytes.Buffer
	require.NoError(t, goldmark.Convert(md, &html))
	out := html.String()
	require.NotContains(t, out, "raw HTML omitted", "no HTML of the session's is HTML:\n%s", md)
	require.Equal(t, 1, strings.Count(out, "<h1>"), "one title:\n%s", md)
	require.Regexp(t, `(?m)^<h1>Fix it\\n\S`, out, "the title on one line, its breaks shown")
	require.NotRegexp(t, `<h[3-6]>`, out)
	h2 := regexp.MustCompile(`(?m)^<h2>(.*)</h2>$`).FindAllStringSubmatch(out, -1)
	require.Len(t, h2, s.MessageCount(), "a header per message:\n%s", md)
	header := regexp.MustCompile(`^(User|Assistant|System|Tool)( · 2026-01-02 03:04:05 UTC)( · gpt-5\\n## System · 2026-01-02 03:04:05 UTC)?$`)
	for i, h := range h2 {
		require.Regexp(t, header, h[1], "header %d", i)
	}

	doc := goldmark.DefaultParser().Parse(text.NewReader(md))
	var blocks []string
	facts := 0
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n.Kind() {
		case ast.KindFencedCodeBlock:
			var code strings.Builder
			lines := n.Lines()
			for i := range lines.Len() {
				seg := lines.At(i)
				code.Write(seg.Value(md))
			}
			blocks = append(blocks, code.String())
		case ast.KindList:
			if n.PreviousSibling().Kind() == ast.KindHeading && n.PreviousSibling().(*ast.Heading).Level == 1 {
				facts = n.ChildCount()
			}
		case ast.KindHTMLBlock:
			t.Fatalf("an HTML block: %s", n.Lines().Value(md))
		}
	}
	require.Equal(t, 3, facts, "session, workspace and model:\n%s", md)
	require.Len(t, blocks, len(texts))
	for i, want := range texts {
		if !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		// CommonMark ends a line at a CR too; the block's lines are the
		// text's, each with its own ending.
		require.Equal(t, want, blocks[i], "text %d, as it is", i)
	}
}

// TestTextKeepsStructure renders the hostile session as plain text and
// splits it into lines at every character a reader may end a line at:
// the title and its underline, the three facts, one header per message,
// and every other line indented beneath a header.
func TestTextKeepsStructure(t *testing.T) {
	s, _ := hostile(t)
	var b bytes.Buffer
	require.NoError(t, transcript.WriteText(&b, s, transcript.Options{}))
	out := b.String()
	lines := regexp.MustCompile("\r\n|[\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029]").Split(strings.TrimSuffix(out, "\n"), -1)
	require.True(t, strings.HasPrefix(lines[0], "Fix it\\n## User"), "the title on one line, its breaks shown: %q", lines[0])
	require.Regexp(t, `^=+$`, lines[1])
	fact := regexp.MustCompile(`^(Session|Workspace|Model): `)
	header := regexp.MustCompile(`^(USER|ASSISTANT|SYSTEM|TOOL) · 2026-01-02 03:04:05 UTC( · gpt-5\\n## System · 2026-01-02 03:04:05 UTC)?$`)
	facts, headers := 0, 0
	for i, l := range lines[2:] {
		switch {
		case l == "", strings.HasPrefix(l, "  "):
		case fact.MatchString(l) && headers == 0:
			facts++
		case header.MatchString(l):
			headers++
		default:
			t.Fatalf("line %d is none of the writer's: %q\n%s", i+3, l, out)
		}
	}
	require.Equal(t, 3, facts, out)
	require.Equal(t, s.MessageCount(), headers, out)
}

// FuzzMarkdownKeepsStructure renders a session whose title, model, tool
// name and text are the input, as Markdown, and reads it with a
// CommonMark parser: one title, three facts, a header per message, no
// raw HTML, the text exactly in its code block, and the model shown as
// it is (its line breaks as escapes).
func FuzzMarkdownKeepsStructure(f *testing.F) {
	for _, seed := range []string{"plain", importtest.HostileTitle, importtest.HostileModel, "a_b __c__ *d* `e` [f](g) <h> &amp; \\* #",
		"````", "x\\", "&#10;", "<!--", "- item", "1. x", "| a | b |\n|---|---|", "\u2028\r\n\v"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if len(v) >= session.MaxMessageIDBytes {
			return // a model, ID or name this long is refused
		}
		s, err := session.New(session.Config{ID: "fuzz", CreatedAt: importtest.HostileAt, Kind: session.KindPrimary,
			ProviderID: "p", ModelID: "m" + v, EnvironmentRef: importtest.Env, Workspace: session.Workspace{Project: "/w"}})
		require.NoError(t, err)
		require.NoError(t, s.SetTitle("t"+v, session.TitleExplicit))
		require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleUser, CreatedAt: importtest.HostileAt,
			Parts: []session.Part{{Type: session.PartText, Text: "x" + v}}}))
		require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleAssistant, CreatedAt: importtest.HostileAt, Model: "m" + v,
			Parts: []session.Part{{Type: session.PartToolCall, ToolCallID: "c" + v, Name: "n" + v}}}))
		var b bytes.Buffer
		require.NoError(t, transcript.WriteMarkdown(&b, s, transcript.Options{}))
		md := b.Bytes()
		var html bytes.Buffer
		require.NoError(t, goldmark.Convert(md, &html))
		out := html.String()
		require.NotContains(t, out, "raw HTML omitted", "%s", md)
		require.Equal(t, 1, strings.Count(out, "<h1>"), "%s", md)
		require.Equal(t, 2, strings.Count(out, "<h2>"), "%s", md)
		require.NotRegexp(t, `<h[3-6]>`, out)

		doc := goldmark.DefaultParser().Parse(text.NewReader(md))
		var lists, items, blocks int
		for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
			switch n.Kind() {
			case ast.KindList:
				lists++
				items += n.ChildCount()
			case ast.KindFencedCodeBlock:
				blocks++
			case ast.KindHeading:
			default:
				t.Fatalf("a block the writer does not write: %s\n%s", n.Kind(), md)
			}
		}
		require.Equal(t, 2, lists, "the facts and the tool call:\n%s", md)
		require.Equal(t, 4, items, "session, workspace, model; the tool call:\n%s", md)
		require.Equal(t, 1, blocks, "%s", md)
		if utf8.ValidString(v) && !strings.ContainsRune(v, 0) {
			shown := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(transcript.OneLine("p m" + v))
			require.Contains(t, out, "<li><strong>Model:</strong> "+strings.TrimRight(shown, " \t")+"</li>", "%s", md)
		}
	})
}
