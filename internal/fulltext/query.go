package fulltext

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxQueryTerms bounds a query, and MaxQueryBytes its text.
const (
	MaxQueryTerms = 32
	MaxQueryBytes = 4 << 10
)

// ErrEmptyQuery reports a query without a word to look for.
var ErrEmptyQuery = errors.New("fulltext: the query has no word to search for")

// Term is one thing a query looks for: one word or a phrase, its words
// folded, in order; with Prefix, the last word matches any word it
// begins.
type Term struct {
	Words  []string
	Prefix bool
}

// Phrase reports whether t is several words in order.
func (t Term) Phrase() bool { return len(t.Words) > 1 }

func (t Term) String() string {
	s := strings.Join(t.Words, " ")
	if t.Prefix {
		s += "*"
	}
	if t.Phrase() {
		s = `"` + s + `"`
	}
	return s
}

// Query is a parsed query: every term must match in one message.
type Query struct {
	Terms []Term
}

func (q Query) String() string {
	s := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		s[i] = t.String()
	}
	return strings.Join(s, " ")
}

// Parse reads a query: terms separated by spaces; "…" quotes a phrase;
// a trailing * makes the term (a word, or the last word of a phrase) a
// prefix; a word that holds separators ("foo.go", "exit-code") is the
// phrase of its words. Case and punctuation elsewhere do not matter. A
// quote left open runs to the end. Errors: ErrEmptyQuery, and a query
// above MaxQueryBytes or MaxQueryTerms.
func Parse(text string) (Query, error) {
	if len(text) > MaxQueryBytes {
		return Query{}, fmt.Errorf("fulltext: query of %d bytes (at most %d)", len(text), MaxQueryBytes)
	}
	var q Query
	add := func(chunk string, quoted bool) {
		if !quoted {
			// A bare chunk: each space-separated piece is a term.
			for _, piece := range strings.Fields(chunk) {
				w := Words(piece)
				if len(w) > 0 {
					q.Terms = append(q.Terms, Term{Words: w, Prefix: strings.HasSuffix(piece, "*")})
				}
			}
			return
		}
		if words := Words(chunk); len(words) > 0 {
			q.Terms = append(q.Terms, Term{Words: words, Prefix: strings.HasSuffix(strings.TrimSpace(chunk), "*")})
		}
	}
	for {
		open := strings.IndexByte(text, '"')
		if open < 0 {
			add(text, false)
			break
		}
		add(text[:open], false)
		rest := text[open+1:]
		end := strings.IndexByte(rest, '"')
		if end < 0 {
			add(rest, true)
			break
		}
		phrase := rest[:end]
		text = rest[end+1:]
		// A * right after the closing quote makes the phrase a prefix.
		if strings.HasPrefix(text, "*") {
			phrase += "*"
			text = text[1:]
		}
		add(phrase, true)
	}
	if len(q.Terms) == 0 {
		return Query{}, ErrEmptyQuery
	}
	if len(q.Terms) > MaxQueryTerms {
		return Query{}, fmt.Errorf("fulltext: query of %d terms (at most %d)", len(q.Terms), MaxQueryTerms)
	}
	return q, nil
}

// Span is a match: the bytes [Start, End) of a text.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Match returns where the terms of q occur in text, in order of their
// position, when every term occurs at least once; nil otherwise.
func (q Query) Match(text string) []Span {
	return q.MatchFields(text)[0]
}

// MatchFields is Match over several fields of one message (its text and
// its tool output): every term must occur in one of them. It returns the
// spans in each field (nil slices where none), or all nil when a term
// occurs in none.
func (q Query) MatchFields(fields ...string) [][]Span {
	out := make([][]Span, max(1, len(fields)))
	found := make([]bool, len(q.Terms))
	for f, text := range fields {
		var toks []Token
		Tokens(text, func(t Token) bool {
			toks = append(toks, t)
			return true
		})
		for ti, t := range q.Terms {
			for i := 0; i+len(t.Words) <= len(toks); i++ {
				if t.matchAt(toks[i:]) {
					found[ti] = true
					out[f] = append(out[f], Span{toks[i].Start, toks[i+len(t.Words)-1].End})
				}
			}
		}
	}
	for _, ok := range found {
		if !ok {
			clear(out)
			return out
		}
	}
	for f := range out {
		out[f] = mergeSpans(out[f])
	}
	return out
}

// matchAt reports whether the term's words begin toks.
func (t Term) matchAt(toks []Token) bool {
	last := len(t.Words) - 1
	for j, w := range t.Words {
		if j == last && t.Prefix {
			if !strings.HasPrefix(toks[j].Word, w) {
				return false
			}
		} else if toks[j].Word != w {
			return false
		}
	}
	return true
}

// mergeSpans sorts spans and merges those that overlap.
func mergeSpans(s []Span) []Span {
	if len(s) < 2 {
		return s
	}
	sortSpans(s)
	out := s[:1]
	for _, sp := range s[1:] {
		last := &out[len(out)-1]
		if sp.Start <= last.End {
			last.End = max(last.End, sp.End)
			continue
		}
		out = append(out, sp)
	}
	return out
}

func sortSpans(s []Span) {
	slices.SortFunc(s, func(a, b Span) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
}

// Instances returns, for each term of q, how many times it occurs in
// text (every word position it begins at, as FTS5 counts a phrase's
// instances), and how many words text has (FTS5's column size). It
// keeps only the last words a term spans: it reads long texts cheaply.
func (q Query) Instances(text string) (counts []int, words int) {
	counts = make([]int, len(q.Terms))
	span := 1
	for _, t := range q.Terms {
		span = max(span, len(t.Words))
	}
	type word struct {
		start, end int
		ascii      bool
	}
	last := make([]word, span) // word i at last[i%span]
	spans(text, func(start, end int, ascii bool) bool {
		last[words%span] = word{start, end, ascii}
		words++
		for ti, t := range q.Terms {
			n := len(t.Words)
			if words < n {
				continue
			}
			match := true
			for j, w := range t.Words {
				got := last[(words-n+j)%span]
				if match = foldedIs(text[got.start:got.end], got.ascii, w, j == n-1 && t.Prefix); !match {
					break
				}
			}
			if match {
				counts[ti]++
			}
		}
		return true
	})
	return counts, words
}
