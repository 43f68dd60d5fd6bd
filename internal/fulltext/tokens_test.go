package fulltext

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// refTokens is the rune-by-rune definition of a text's words that Tokens
// and Instances implement with an ASCII table: every maximal run of word
// runes (IsWordRune; an invalid byte and U+FFFD separate), folded.
func refTokens(s string) []Token {
	var out []Token
	start := -1
	for i, r := range s {
		word := r != utf8.RuneError && IsWordRune(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			out = append(out, Token{Word: Fold(s[start:i]), Start: start, End: i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, Token{Word: Fold(s[start:]), Start: start, End: len(s)})
	}
	return out
}

// refInstances counts each term's instances among refTokens' words.
func refInstances(q Query, s string) ([]int, int) {
	toks := refTokens(s)
	counts := make([]int, len(q.Terms))
	for ti, t := range q.Terms {
		for i := 0; i+len(t.Words) <= len(toks); i++ {
			if t.matchAt(toks[i:]) {
				counts[ti]++
			}
		}
	}
	return counts, len(toks)
}

// pieces are what the random texts and queries are made of: ASCII words
// in both cases, digits, separators, letters whose lower case is longer
// or ASCII (İ, the Kelvin sign), a combining mark, other scripts' letters
// and digits, a private-use rune, U+FFFD and invalid bytes.
var pieces = []string{
	"zebra", "Zebra", "ZEBRA", "zeb", "okapi", "Ok", "a", "A1", "42", "x_y",
	" ", "  ", ".", "-", "\n", "\"", "*", "é", "É", "e\u0301", "\u0130", "\u212a", "k",
	"\u0663", "日本", "\ue000", "\ufffd", "\xff", "\xc3", "ß", "Σ", "σ",
}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestInstancesAgreesWithRunes: over 500 seeds of random texts and
// queries made of the pieces above, Tokens gives refTokens' words and
// Instances refInstances' counts.
func TestInstancesAgreesWithRunes(t *testing.T) {
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 25))
		text := randomText(r, 1+r.IntN(60))
		var got []Token
		Tokens(text, func(tok Token) bool {
			got = append(got, tok)
			return true
		})
		want := refTokens(text)
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, got, "seed %d: %q", seed, text)
		for range 5 {
			q, err := Parse(randomText(r, 1+r.IntN(6)) + []string{"", "*", "\"", " \"a b\"*"}[r.IntN(4)])
			if err != nil {
				continue
			}
			gc, gw := q.Instances(text)
			wc, ww := refInstances(q, text)
			require.Equal(t, wc, gc, "seed %d: %q in %q", seed, q, text)
			require.Equal(t, ww, gw, "seed %d: words of %q", seed, text)
		}
	}
}

// BenchmarkInstances measures Instances over 4 MiB of code-like ASCII
// text (a tool's output), the work a search does for each message the
// index does not hold yet.
func BenchmarkInstances(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 4<<20 {
		sb.WriteString("func (s *Server) handle(w http.ResponseWriter, r *http.Request) { // TODO: check the error returned by json.Unmarshal at line 42, value=0x1f3a\n")
	}
	text := sb.String()
	q, err := Parse("zebra")
	require.NoError(b, err)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		q.Instances(text)
	}
}
