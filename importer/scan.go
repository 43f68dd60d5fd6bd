package importer

import (
	"bytes"
	"encoding/binary"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The converters read every byte of a source, most of them inside long
// strings (tool output, file contents), and the same bytes at several
// depths: a line, its message, the message's content blocks. This file
// is the scanner that makes that cheap: one validating pass per line,
// eight bytes at a time through a string's plain runs, and, within a line
// it validated, skipping a value with bytes.IndexByte from quote to quote.
// What it accepts is exactly what encoding/json accepts, and it unquotes
// strings as encoding/json does (invalid UTF-8 and lone surrogates become
// U+FFFD); the tests hold it to that.

// maxDepth is the deepest nesting encoding/json accepts.
const maxDepth = 10000

// isSpace reports JSON's insignificant white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plainRun returns the end of the run of string bytes at b[i:] that need
// no attention: not a quote, a backslash or a control character and,
// with ascii, not above 0x7F.
func plainRun(b []byte, i int, ascii bool) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte below 0x20, or equal to '"' or '\\', sets its top bit in
		// stop (exact for "any", the usual zero-byte test).
		stop := (x - 0x20*lsb) &^ x
		q, s := x^('"'*lsb), x^('\\'*lsb)
		stop |= (q - lsb) &^ q
		stop |= (s - lsb) &^ s
		if ascii {
			stop |= x
		}
		if stop&msb != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c < 0x20 || c == '"' || c == '\\' || ascii && c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// scanString returns the end of the valid JSON string starting at b[i]
// (a quote), or -1.
func scanString(b []byte, i int) int {
	i++
	for {
		i = plainRun(b, i, false)
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		}
		// A backslash.
		if i+1 >= len(b) {
			return -1
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if hex4(b, i+2) < 0 {
				return -1
			}
			i += 6
		default:
			return -1
		}
	}
}

// hex4 returns the four hex digits at b[i:] as a number, or -1.
func hex4(b []byte, i int) rune {
	if i+4 > len(b) {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber returns the end of the JSON number starting at b[i], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case isDigit(b[i]):
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i
}

// scanLiteral returns the end of lit at b[i:], or -1.
func scanLiteral(b []byte, i int, lit string) int {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return -1
	}
	return i + len(lit)
}

// scan reports whether b is one JSON value, as encoding/json.Valid does
// (white space around it allowed, nesting at most maxDepth deep), and
// whether any white space lies outside its strings (compact is false
// then).
func scan(b []byte) (ok, compact bool) {
	var arr [64]byte
	stack := arr[:0] // the open containers' opening brackets
	compact = true
	space := func(i int) int {
		j := skipSpace(b, i)
		if j != i {
			compact = false
		}
		return j
	}
	// key reads an object's key and its colon, and returns where the
	// value starts.
	key := func(i int) int {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		if i = scanString(b, i); i < 0 {
			return -1
		}
		if i = space(i); i >= len(b) || b[i] != ':' {
			return -1
		}
		return space(i + 1)
	}
	i := space(0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false, compact
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) == maxDepth {
				return false, compact
			}
			stack = append(stack, c)
			i = space(i + 1)
			if i < len(b) && b[i] == c+2 { // '}' and ']' follow '{' and '[' by two
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = key(i); i < 0 {
					return false, compact
				}
			}
			continue
		case '"':
			i = scanString(b, i)
		case 't':
			i = scanLiteral(b, i, "true")
		case 'f':
			i = scanLiteral(b, i, "false")
		case 'n':
			i = scanLiteral(b, i, "null")
		default:
			i = scanNumber(b, i)
		}
		// A value ended at b[i]: close the containers it ends, then
		// either the next member or element starts, or b ends.
		for {
			if i < 0 {
				return false, compact
			}
			i = space(i)
			if len(stack) == 0 {
				return i == len(b), compact
			}
			if i >= len(b) {
				return false, compact
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false, compact
			}
			i = space(i + 1)
			if top == '{' {
				i = key(i)
				if i < 0 {
					return false, compact
				}
			}
			break
		}
	}
}

// skipString returns the end of the string starting at b[i] (a quote) in
// valid JSON, or -1.
func skipString(b []byte, i int) int {
	start := i + 1
	for i = start; ; i++ {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		k := i
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 { // not escaped
			return i + 1
		}
	}
}

// skip returns the end of the value starting at b[i] in valid JSON, or -1
// (never past b, whatever b holds).
func skip(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	start := i
	for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ':' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// stringAt decodes the string starting at b[i] (a quote) in valid JSON,
// as encoding/json would, and returns it and its end (-1: not a string).
func stringAt(b []byte, i int) (string, int) {
	start := i + 1
	j := plainRun(b, start, true)
	if j < len(b) && b[j] == '"' {
		return string(b[start:j]), j + 1 // the common case: plain ASCII
	}
	s, end := unquote(b, i)
	if end < 0 {
		return "", -1
	}
	return string(s), end
}

// unquote decodes the string starting at b[i] (a quote) as encoding/json
// does: escapes resolved, each invalid UTF-8 byte and each lone surrogate
// U+FFFD. It returns the string's bytes (b's own when the string holds
// nothing to change) and its end, or -1 for something that is not a valid
// string.
func unquote(b []byte, i int) ([]byte, int) {
	start := i + 1
	j, valid := start, true
	for {
		j = plainRun(b, j, true)
		if j >= len(b) || b[j] == '"' || b[j] == '\\' || b[j] < 0x20 {
			break
		}
		r, n := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError && n == 1 {
			valid = false
		}
		j += n
	}
	if j >= len(b) || b[j] < 0x20 {
		return nil, -1
	}
	if b[j] == '"' && valid {
		return b[start:j], j + 1
	}
	out := make([]byte, 0, j-start+16)
	var u [utf8.UTFMax]byte
	for j = start; ; {
		if j >= len(b) {
			return nil, -1
		}
		switch c := b[j]; {
		case c == '"':
			return out, j + 1
		case c < 0x20:
			return nil, -1
		case c == '\\':
			if j+1 >= len(b) {
				return nil, -1
			}
			switch e := b[j+1]; e {
			case '"', '\\', '/':
				out, j = append(out, e), j+2
			case 'b':
				out, j = append(out, '\b'), j+2
			case 'f':
				out, j = append(out, '\f'), j+2
			case 'n':
				out, j = append(out, '\n'), j+2
			case 'r':
				out, j = append(out, '\r'), j+2
			case 't':
				out, j = append(out, '\t'), j+2
			case 'u':
				r := hex4(b, j+2)
				if r < 0 {
					return nil, -1
				}
				j += 6
				if utf16.IsSurrogate(r) {
					// A pair takes the next escape with it; a lone half
					// is U+FFFD, and the next escape is read on its own.
					if j+1 < len(b) && b[j] == '\\' && b[j+1] == 'u' {
						if r2 := hex4(b, j+2); r2 >= 0 {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								out = utf8.AppendRune(out, dec)
								j += 6
								break
							}
						}
					}
					r = unicode.ReplacementChar
				}
				n := utf8.EncodeRune(u[:], r)
				out = append(out, u[:n]...)
			default:
				return nil, -1
			}
		case c < utf8.RuneSelf:
			k := plainRun(b, j, true)
			out = append(out, b[j:k]...)
			j = k
		default:
			r, n := utf8.DecodeRune(b[j:])
			j += n
			out = utf8.AppendRune(out, r)
		}
	}
}

// compactTo appends b, valid JSON, without the white space outside its
// strings, to dst.
func compactTo(dst, b []byte) []byte {
	i := skipSpace(b, 0)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			end := skipString(b, i)
			if end < 0 {
				return append(dst, b[i:]...)
			}
			dst = append(dst, b[i:end]...)
			i = end
		case isSpace(c):
			i++
		default:
			j := i + 1
			for j < len(b) && b[j] != '"' && !isSpace(b[j]) {
				j++
			}
			dst = append(dst, b[i:j]...)
			i = j
		}
	}
	return dst
}
