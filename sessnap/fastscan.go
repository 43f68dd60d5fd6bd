package sessnap

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// scanner reads JSON for the fast decoder (fastdecode.go). Its methods
// return false for anything they do not accept; the decoder then leaves
// the whole snapshot to encoding/json, so a scanner only has to be right
// about what it accepts: valid JSON, read as encoding/json reads it.
type scanner struct {
	b []byte
	i int
}

// maxFastDepth bounds the nesting the scanner follows; deeper values go
// to encoding/json (whose own limit is 10,000).
const maxFastDepth = 512

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// consume steps over c, the next byte after whitespace.
func (s *scanner) consume(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// str reads a string at s.i: its bytes between the quotes, and whether
// they hold an escape. Control characters and malformed escapes are
// refused.
func (s *scanner) str() (raw []byte, escaped bool, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], escaped, true
		case c == '\\':
			escaped = true
			j++
			if j >= len(s.b) {
				return nil, false, false
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[j+1 : j+5] {
					if unhex(h) < 0 {
						return nil, false, false
					}
				}
				j += 4
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		}
	}
	return nil, false, false
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// unescape appends the content of a string str read with escapes. A
// \u escape of a surrogate (which encoding/json pairs or replaces) is
// refused.
func unescape(dst, raw []byte) ([]byte, bool) {
	for len(raw) > 0 {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return append(dst, raw...), true
		}
		dst = append(dst, raw[:k]...)
		switch c := raw[k+1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := unhex(raw[k+2])<<12 | unhex(raw[k+3])<<8 | unhex(raw[k+4])<<4 | unhex(raw[k+5])
			if 0xD800 <= r && r < 0xE000 {
				return nil, false
			}
			dst = utf8.AppendRune(dst, r)
			raw = raw[k+6:]
			continue
		}
		raw = raw[k+2:]
	}
	return dst, true
}

// text reads a string value as a Go string.
func (s *scanner) text() (string, bool) {
	raw, esc, ok := s.str()
	if !ok {
		return "", false
	}
	if !esc {
		return string(raw), true
	}
	b, ok := unescape(make([]byte, 0, len(raw)), raw)
	return string(b), ok
}

// bytesValue reads a string value's unescaped bytes (shared with the
// input when it holds no escape: the caller copies or decodes them).
func (s *scanner) bytesValue() ([]byte, bool) {
	raw, esc, ok := s.str()
	if !ok || !esc {
		return raw, ok
	}
	return unescape(make([]byte, 0, len(raw)), raw)
}

// boolean reads true or false.
func (s *scanner) boolean() (v, ok bool) {
	switch s.peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	}
	return false, false
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// integer reads a JSON integer (no fraction, no exponent) that fits an
// int64, as encoding/json reads one into an int64.
func (s *scanner) integer() (int64, bool) {
	start := s.i
	if !s.number() {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return n, err == nil
}

// number reads a number in JSON's grammar.
func (s *scanner) number() bool {
	if s.peek() == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// value steps over one JSON value, checking it, and returns its bytes.
func (s *scanner) value(depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	c := s.peek()
	start := s.i
	var ok bool
	switch c {
	case '"':
		_, _, ok = s.str()
	case '{':
		ok = s.object(func(_ []byte, _ bool) bool {
			_, ok := s.value(depth + 1)
			return ok
		})
	case '[':
		ok = s.array(func() bool {
			_, ok := s.value(depth + 1)
			return ok
		})
	case 't':
		ok = s.literal("true")
	case 'f':
		ok = s.literal("false")
	case 'n':
		ok = s.literal("null")
	default:
		ok = s.number()
	}
	if !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// object reads an object, calling member with each key (its raw bytes,
// and whether they hold an escape) with the scanner at the value, which
// member must read.
func (s *scanner) object(member func(key []byte, escaped bool) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		key, esc, ok := s.str()
		if !ok || !s.consume(':') {
			return false
		}
		s.ws()
		if !member(key, esc) {
			return false
		}
		if s.consume('}') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// array reads an array, calling elem with the scanner at each element,
// which elem must read.
func (s *scanner) array(elem func() bool) bool {
	if !s.consume('[') {
		return false
	}
	if s.consume(']') {
		return true
	}
	for {
		s.ws()
		if !elem() {
			return false
		}
		if s.consume(']') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// foreignKey reports whether key, a key none of names is, can be left
// unread as encoding/json leaves it: it holds no escape and no byte
// beyond ASCII (encoding/json folds some letters beyond ASCII onto ASCII
// ones), and matches none of names in any case.
func foreignKey(key []byte, escaped bool, names []string) bool {
	if escaped {
		return false
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return true
}
