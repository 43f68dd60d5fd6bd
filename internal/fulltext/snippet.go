package fulltext

import (
	"unicode"
	"unicode/utf8"
)

// SnippetBytes is the usual length of a snippet.
const SnippetBytes = 160

// Ellipsis marks where a snippet cuts its text.
const Ellipsis = "…"

// Snippet returns about width bytes of text around its first match (the
// first of spans, which are in order) with every run of white space made
// one space, and where the matches are in it. It cuts only at character
// boundaries, preferring spaces, and marks a cut with Ellipsis. Without
// spans it is the beginning of text.
func Snippet(text string, spans []Span, width int) (string, []Span) {
	if width <= 0 {
		width = SnippetBytes
	}
	from := 0
	if len(spans) > 0 {
		// A third of the room before the match, the rest after it.
		from = max(0, spans[0].Start-width/3)
	}
	to := min(len(text), from+width)
	if len(spans) > 0 && spans[0].End > to {
		to = min(len(text), spans[0].End) // a long match is shown whole
	}
	if to == len(text) {
		from = max(0, min(from, to-width))
		if len(spans) > 0 {
			from = min(from, spans[0].Start)
		}
	}
	from, to = wordStart(text, from, spans), wordEnd(text, to, spans)

	var out []byte
	var marks []Span
	if from > 0 {
		out = append(out, Ellipsis...)
	}
	si := 0
	for si < len(spans) && spans[si].End <= from {
		si++
	}
	space, wrote := false, false
	open := -1
	for i := from; i < to; {
		for si < len(spans) && open < 0 && i >= spans[si].Start {
			open = len(out)
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			if !space && wrote {
				out = append(out, ' ')
			}
			space = true
		} else {
			space, wrote = false, true
			out = append(out, text[i:i+size]...)
		}
		i += size
		if open >= 0 && i >= spans[si].End {
			marks = append(marks, Span{open, len(out)})
			open = -1
			si++
		}
	}
	if open >= 0 {
		marks = append(marks, Span{open, len(out)})
	}
	if n := len(out); space && n > 0 && out[n-1] == ' ' {
		out = out[:n-1]
	}
	if to < len(text) {
		out = append(out, Ellipsis...)
	}
	return string(out), marks
}

// wordStart moves a cut at from back to a character boundary, and forward
// to the start of a word when one begins within a few bytes, never past
// the first match.
func wordStart(text string, from int, spans []Span) int {
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	if from == 0 {
		return 0
	}
	limit := min(len(text), from+16)
	if len(spans) > 0 {
		limit = min(limit, spans[0].Start)
	}
	for i := from; i < limit; i++ {
		if text[i] == ' ' || text[i] == '\n' || text[i] == '\t' {
			return i + 1
		}
	}
	return from
}

// wordEnd moves a cut at to back to a character boundary, and back to the
// end of a word when one ends within a few bytes, never before the first
// match's end.
func wordEnd(text string, to int, spans []Span) int {
	if to >= len(text) {
		return len(text)
	}
	for to > 0 && !utf8.RuneStart(text[to]) {
		to--
	}
	limit := max(0, to-16)
	if len(spans) > 0 {
		limit = max(limit, spans[0].End)
	}
	for i := to; i > limit; i-- {
		if text[i-1] == ' ' || text[i-1] == '\n' || text[i-1] == '\t' {
			return i - 1
		}
	}
	return to
}
