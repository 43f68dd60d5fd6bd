package fulltext

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/session"
)

func TestWords(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"separators", "Foo_bar-2 baz.go", []string{"foo", "bar", "2", "baz", "go"}},
		{"unicode letters and marks", "Ünïcode café cafe\u0301 日本語", []string{"ünïcode", "café", "cafe\u0301", "日本語"}},
		{"digits", "v1.2.3 x86_64", []string{"v1", "2", "3", "x86", "64"}},
		{"invalid utf-8 separates", "ab\xffcd", []string{"ab", "cd"}},
		{"nothing", " \t\n…—", nil},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Words(tt.in), tt.name)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"Foo bar", "foo bar", nil},
		{`"exit status" worker*`, `"exit status" worker*`, nil},
		{`"make te*"`, `"make te*"`, nil},
		{`"go te"*`, `"go te*"`, nil},
		{"config.yaml", `"config yaml"`, nil},
		{`"open quote runs on`, `"open quote runs on"`, nil},
		{`a "" b`, "a b", nil},
		{"", "", ErrEmptyQuery},
		{`"" * -`, "", ErrEmptyQuery},
	}
	for _, tt := range tests {
		q, err := Parse(tt.in)
		if tt.wantErr != nil {
			require.ErrorIs(t, err, tt.wantErr, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, q.String(), tt.in)
	}
	_, err := Parse(strings.Repeat("w ", MaxQueryTerms+1))
	require.Error(t, err)
	_, err = Parse(strings.Repeat("x", MaxQueryBytes+1))
	require.Error(t, err)
}

func TestMatch(t *testing.T) {
	text := "The quick brown fox; the QUICK-brown dog."
	tests := []struct {
		query string
		want  []string // the matched pieces
	}{
		{"quick", []string{"quick", "QUICK"}},
		{`"quick brown"`, []string{"quick brown", "QUICK-brown"}},
		{`"brown quick"`, nil},
		{"qui*", []string{"quick", "QUICK"}},
		{"fox dog", []string{"fox", "dog"}},
		{"fox cat", nil},
		{"he", nil}, // a word, not a substring
		{`"the qu*"`, []string{"The quick", "the QUICK"}},
	}
	for _, tt := range tests {
		q, err := Parse(tt.query)
		require.NoError(t, err)
		var got []string
		for _, s := range q.Match(text) {
			got = append(got, text[s.Start:s.End])
		}
		require.Equal(t, tt.want, got, tt.query)
	}
}

// TestMatchAgreesWithWords checks, over seeds, that a term matches a text
// exactly when its words occur in the text's words in order, and that
// every span covers such words.
func TestMatchAgreesWithWords(t *testing.T) {
	vocab := []string{"ab", "abc", "b", "ba", "c", "Ab"}
	seps := []string{" ", "-", ".", "\n", ", ", "_"}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(vocab[r.IntN(len(vocab))])
			b.WriteString(seps[r.IntN(len(seps))])
		}
		text := b.String()
		words := Words(text)
		n := 1 + r.IntN(3)
		tw := make([]string, n)
		for i := range tw {
			tw[i] = Fold(vocab[r.IntN(len(vocab))])
		}
		term := Term{Words: tw, Prefix: r.IntN(2) == 0}
		want := false
		for i := 0; i+n <= len(words); i++ {
			ok := true
			for j := range tw {
				w := words[i+j]
				if j == n-1 && term.Prefix {
					ok = ok && strings.HasPrefix(w, tw[j])
				} else {
					ok = ok && w == tw[j]
				}
			}
			want = want || ok
		}
		spans := Query{Terms: []Term{term}}.Match(text)
		require.Equal(t, want, spans != nil, "seed %d: %s in %q", seed, term, text)
		for _, s := range spans {
			require.NotEmpty(t, Words(text[s.Start:s.End]), "seed %d", seed)
		}
	}
}

// TestSnippet checks, over seeds, that a snippet is short, holds its
// marks on the matched words, and says where it cut.
func TestSnippet(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 2))
		var b strings.Builder
		for range r.IntN(400) {
			fmt.Fprintf(&b, "w%d%s", r.IntN(50), []string{" ", "\n\n", "\t", "é "}[r.IntN(4)])
		}
		text := b.String()
		q, err := Parse(fmt.Sprintf("w%d", r.IntN(50)))
		require.NoError(t, err)
		spans := q.Match(text)
		snip, marks := Snippet(text, spans, SnippetBytes)
		require.LessOrEqual(t, len(snip), SnippetBytes+2*len(Ellipsis)+16, "seed %d", seed)
		require.NotContains(t, snip, "\n", "seed %d", seed)
		require.NotContains(t, snip, "  ", "seed %d", seed)
		if spans == nil {
			require.Empty(t, marks)
			continue
		}
		require.NotEmpty(t, marks, "seed %d: %q", seed, snip)
		for _, m := range marks {
			require.Equal(t, q.Terms[0].Words[0], Fold(snip[m.Start:m.End]), "seed %d: %q", seed, snip)
		}
		flat := strings.Join(strings.Fields(text), " ")
		body := strings.TrimSuffix(strings.TrimPrefix(snip, Ellipsis), Ellipsis)
		require.Contains(t, flat, body, "seed %d", seed)
		require.Equal(t, !strings.HasPrefix(flat, body), strings.HasPrefix(snip, Ellipsis), "seed %d: %q", seed, snip)
		require.Equal(t, !strings.HasSuffix(flat, body), strings.HasSuffix(snip, Ellipsis), "seed %d: %q", seed, snip)
	}
}

// TestAppearances checks, over seeds, the revision each message appeared
// at against the rule applied revision by revision, and the incremental
// answer (from a later revision on) against the whole.
func TestAppearances(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 3))
		var counts []Count
		n := 0
		for range 1 + r.IntN(20) {
			c := Count{Kept: n}
			switch r.IntN(8) {
			case 0: // replaced
				c.Kept = r.IntN(n + 1)
				n = c.Kept + r.IntN(3)
			default:
				n += r.IntN(3)
			}
			c.N = n
			counts = append(counts, c)
		}
		// The rule, revision by revision: a message's revision is reset
		// whenever a revision does not keep it.
		want := make([]uint64, 0)
		for k, c := range counts {
			want = want[:min(len(want), c.Kept)]
			for len(want) < c.N {
				want = append(want, uint64(k+1))
			}
		}
		got, ok := Appearances(0, counts, 0)
		require.True(t, ok, "seed %d", seed)
		require.Equal(t, want, got, "seed %d: %v", seed, counts)

		after := r.IntN(len(counts))
		known := 0
		if after > 0 {
			known = counts[after-1].N
		}
		inc, ok := Appearances(uint64(after), counts[after:], known)
		cut := false
		for _, c := range counts[after:] {
			cut = cut || c.Kept < known || c.N < known
		}
		require.Equal(t, !cut, ok, "seed %d", seed)
		if ok {
			require.Equal(t, want[known:], inc, "seed %d after %d", seed, after)
		}
	}
}

func TestDigestChains(t *testing.T) {
	a := Doc{Role: session.RoleUser, Text: "ab", Tool: ""}
	b := Doc{Role: session.RoleUser, Text: "a", Tool: "b"}
	var z Digest
	require.NotEqual(t, z.Add(&a), z.Add(&b), "field boundaries count")
	require.Equal(t, z.Add(&a).Add(&b), z.Add(&a).Add(&b))
	require.NotEqual(t, z.Add(&a).Add(&b), z.Add(&b).Add(&a), "order counts")
}

// TestDigestIsTheLinksSHA256 holds Add to its definition: each link
// is the SHA-256 of the previous link and the doc's role, text and tool,
// each after its length as 8 bytes, big-endian.
func TestDigestIsTheLinksSHA256(t *testing.T) {
	var prev Digest
	for i, doc := range []Doc{
		{Role: session.RoleUser, Text: "hello"},
		{Role: session.RoleAssistant, Text: strings.Repeat("long text ", 10000), Tool: "grep\n{}"},
		{},
	} {
		var want bytes.Buffer
		want.Write(prev[:])
		for _, s := range []string{string(doc.Role), doc.Text, doc.Tool} {
			_ = binary.Write(&want, binary.BigEndian, uint64(len(s)))
			want.WriteString(s)
		}
		next := prev.Add(&doc)
		require.Equal(t, Digest(sha256.Sum256(want.Bytes())), next, "doc %d", i)
		prev = next
	}
}

// TestMessageDocLines: the parts of a kind are joined by line breaks,
// empty ones left out; one alone is its text as it is.
func TestMessageDocLines(t *testing.T) {
	text := func(ss ...string) []session.Part {
		var ps []session.Part
		for _, s := range ss {
			ps = append(ps, session.Part{Type: session.PartText, Text: s})
		}
		return ps
	}
	for _, tc := range []struct {
		parts []session.Part
		err   string
		want  string
	}{
		{nil, "", ""},
		{text("one"), "", "one"},
		{text("", "one", ""), "", "one"},
		{text("one", "", "two"), "", "one\ntwo"},
		{text("one", "two", "three"), "", "one\ntwo\nthree"},
		{text(""), "boom", "boom"},
		{text("one"), "boom", "one\nboom"},
	} {
		d, ok := MessageDoc(&session.Message{Role: session.RoleUser, Parts: tc.parts, Error: tc.err})
		require.True(t, ok)
		require.Equal(t, tc.want, d.Text, "%+v %q", tc.parts, tc.err)
		require.Empty(t, d.Tool)
	}
	out := strings.Repeat("x", 1<<16)
	d, _ := MessageDoc(&session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c", Output: out}}})
	require.Equal(t, out, d.Tool)
	require.Equal(t, unsafe.StringData(out), unsafe.StringData(d.Tool), "one part alone is not copied") //nolint:gosec // G103: compares where two strings point, reads nothing
}

func TestMessageDoc(t *testing.T) {
	m := session.Message{Role: session.RoleTool, Error: "boom", Parts: []session.Part{
		{Type: session.PartText, Text: "said"},
		{Type: session.PartReasoning, Text: "thought"},
		{Type: session.PartToolCall, ToolCallID: "c", Name: "grep", Input: []byte(`{"q":"x"}`)},
		{Type: session.PartToolResult, ToolCallID: "c", Output: "out", Content: []session.Part{{Type: session.PartText, Text: "nested"}}},
		{Type: session.PartImage, MediaType: "image/png", Data: []byte{1}},
	}}
	d, ok := MessageDoc(&m)
	require.True(t, ok)
	require.Equal(t, "said\nthought\nboom", d.Text)
	require.Equal(t, "grep\n{\"q\":\"x\"}\nout\nnested", d.Tool)
	m.Parts[0] = session.Part{Type: session.PartText, Ref: &session.ContentRef{Field: session.ContentText, SHA256: strings.Repeat("a", 64), Size: 3}}
	_, ok = MessageDoc(&m)
	require.False(t, ok, "text kept out of line is not in memory")
	require.False(t, errors.Is(nil, ErrEmptyQuery))
}
