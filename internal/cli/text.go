package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// unsafe reports whether a terminal may act on r rather than show it: C0
// controls (ESC starts escape sequences, OSC among them; BEL, backspace
// and carriage return move or sound), DEL, C1 controls (U+0080-U+009F,
// which some terminals take as CSI, OSC, …), and the bidirectional
// controls that make text display in another order than it is stored.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// Escape returns s as a terminal may print it: every byte or character a
// terminal could act on (see unsafe) is written as a visible escape —
// \x1b for ESC, \x7f for DEL, \u009b for a C1 control, \u202e for a
// bidirectional override — and so is each byte of invalid UTF-8 (\xff).
// Everything else is kept. Titles, labels and host names come from
// whoever wrote the session; they go through Escape before any table or
// message prints them.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// EscapeJSON rewrites the characters of a JSON document that a terminal
// could act on and that encoding/json leaves as they are (DEL, C1 and
// bidirectional controls; it escapes the C0 ones itself) as \u escapes.
// Outside strings JSON holds none of them, so the document means the same.
func EscapeJSON(b []byte) []byte {
	clean := true
	for _, r := range string(b) {
		if r >= 0x7f && unsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x7f && unsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// Cell is s as a table cell: white space runs (newlines included) folded
// into one space, then escaped.
func Cell(s string) string { return Escape(strings.Join(strings.Fields(s), " ")) }

// Width is the number of terminal cells s takes (East Asian wide
// characters and most emoji take two, combining marks none).
func Width(s string) int { return uniseg.StringWidth(s) }

// Truncate shortens s to at most width terminal cells, whole grapheme
// clusters only, marking the cut with "…".
func Truncate(s string, width int) string {
	if Width(s) <= width {
		return s
	}
	if width <= 0 {
		return ""
	}
	var b strings.Builder
	used := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		w := g.Width()
		if used+w > width-1 {
			break
		}
		b.WriteString(g.Str())
		used += w
	}
	return strings.TrimRight(b.String(), " ") + "…" // no blank before the mark
}

// Plural is "1 session", "2 sessions", "0 sessions": n and word, with an
// s unless n is 1.
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// HumanBytes prints a size in binary units: 512 B, 1.5 KiB, 12 MiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v < 10 {
		return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.0f %ciB", v, "KMGTPE"[exp])
}

// OneLine folds s onto one line (for an error message in a table).
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
