package fulltext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsWordRune reports whether r is part of a word: a letter, a digit (any
// number), a mark or a private-use character. Everything else separates
// words. SQLite's unicode61 tokenizer with categories 'L* N* Co M*' and
// no diacritics removal cuts text the same way.
func IsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) || unicode.Is(unicode.Co, r)
}

// Fold is a word as it is compared: in lower case.
func Fold(word string) string { return strings.ToLower(word) }

// Token is one word of a text: Start and End are byte offsets of it in
// the text, Word is it folded.
type Token struct {
	Word       string
	Start, End int
}

// Tokens calls fn for each word of s, in order, until fn returns false.
func Tokens(s string, fn func(Token) bool) {
	start := -1
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		word := r != utf8.RuneError && IsWordRune(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			if !fn(Token{Word: Fold(s[start:i]), Start: start, End: i}) {
				return
			}
			start = -1
		}
		i += size
	}
	if start >= 0 {
		fn(Token{Word: Fold(s[start:]), Start: start, End: len(s)})
	}
}

// Words returns the folded words of s.
func Words(s string) []string {
	var w []string
	Tokens(s, func(t Token) bool {
		w = append(w, t.Word)
		return true
	})
	return w
}
