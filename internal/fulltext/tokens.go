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
	spans(s, func(start, end int, _ bool) bool {
		return fn(Token{Word: Fold(s[start:end]), Start: start, End: end})
	})
}

// asciiWord says which ASCII bytes are word runes (IsWordRune).
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = IsWordRune(rune(c))
	}
	return t
}()

// spans calls fn with the byte offsets of each word of s, in order, and
// whether the word is all ASCII (its folded form is then its ASCII lower
// case), until fn returns false. ASCII bytes are classified by a table,
// the rest by IsWordRune; an invalid byte separates words.
func spans(s string, fn func(start, end int, ascii bool) bool) {
	start, ascii := -1, true
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			switch {
			case asciiWord[c] && start < 0:
				start, ascii = i, true
			case !asciiWord[c] && start >= 0:
				if !fn(start, i, ascii) {
					return
				}
				start = -1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch word := r != utf8.RuneError && IsWordRune(r); {
		case word:
			if start < 0 {
				start = i
			}
			ascii = false
		case start >= 0:
			if !fn(start, i, ascii) {
				return
			}
			start = -1
		}
		i += size
	}
	if start >= 0 {
		fn(start, len(s), ascii)
	}
}

// foldedIs reports whether word, all ASCII when ascii is set, folds to w
// (to a word that begins with w, with prefix set), without folding an
// ASCII word into a new string.
func foldedIs(word string, ascii bool, w string, prefix bool) bool {
	if !ascii {
		if f := Fold(word); prefix {
			return strings.HasPrefix(f, w)
		} else {
			return f == w
		}
	}
	if len(word) < len(w) || !prefix && len(word) != len(w) {
		return false
	}
	for i := range len(w) {
		c := word[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
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
