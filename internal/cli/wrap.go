package cli

import (
	"strings"
	"unicode/utf8"
)

// HelpWidth is the widest line a help page has: an 80-column terminal's.
const HelpWidth = 80

// Wrap breaks each line of text wider than width columns (counted in
// runes) at its last space that fits, continuing on a line indented as it
// was, two columns more. A word wider than the line stays whole.
func Wrap(text string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
		cont := lead + "  "
		for utf8.RuneCountInString(line) > width {
			cut := breakAt(line, width, len(lead))
			if cut < 0 {
				break
			}
			b.WriteString(strings.TrimRight(line[:cut], " "))
			b.WriteByte('\n')
			line = cont + strings.TrimLeft(line[cut:], " ")
			lead = cont
		}
		b.WriteString(line)
	}
	return b.String()
}

// breakAt returns the byte offset of the last space in line after its
// indent (from bytes in) where the part before fits width runes, or -1.
func breakAt(line string, width, from int) int {
	cut, n := -1, 0
	for i, r := range line {
		if n > width {
			break
		}
		if r == ' ' && i > from {
			cut = i
		}
		n++
	}
	return cut
}
