package record

import (
	"bytes"
	"errors"
	"fmt"
)

// A minimal JSON scanner for deltas: it splits an object into members and
// an array into elements, handing out each key and value as the bytes that
// appear in the input. It checks structure (strings, nesting, separators)
// but not the grammar of numbers and literals inside values: a delta's
// result is checked against its length and checksum, and a reader decodes
// the snapshot it rebuilds, which validates it. It never recurses, so deep
// nesting cannot exhaust the stack.

var errSyntax = errors.New("malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the offset after the string starting at b[i] ('"').
// It jumps from quote to quote (a fast search: strings are most of a
// snapshot's bytes); a quote preceded by an odd number of backslashes is
// escaped.
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			break
		}
		q := i + j
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1, nil
		}
		i = q + 1
	}
	return 0, fmt.Errorf("%w: unterminated string", errSyntax)
}

// skipValue returns the offset after the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: value expected at end", errSyntax)
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		// Track the stack of open brackets in a byte slice: nesting
		// depth costs memory proportional to the input, never stack.
		var stack []byte
		for i < len(b) {
			switch c := b[i]; c {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				stack = append(stack, c+2) // '{'+2 == '}', '['+2 == ']'
			case '}', ']':
				if len(stack) == 0 || stack[len(stack)-1] != c {
					return 0, fmt.Errorf("%w: unbalanced %q at byte %d", errSyntax, c, i)
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, fmt.Errorf("%w: unterminated object or array", errSyntax)
	case '}', ']', ',', ':':
		return 0, fmt.Errorf("%w: value expected at byte %d", errSyntax, i)
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ':' && b[j] != '"' && b[j] != '{' && b[j] != '[' {
		j++
	}
	return j, nil
}

// eachMember calls fn with each member of the object b (the whole of b,
// surrounding whitespace aside), key quoted, in order.
func eachMember(b []byte, fn func(k, v []byte) error) error {
	return eachItem(b, '{', '}', true, fn)
}

// eachElement calls fn with each element of the array b.
func eachElement(b []byte, fn func(e []byte) error) error {
	return eachItem(b, '[', ']', false, func(_, e []byte) error { return fn(e) })
}

func eachItem(b []byte, open, close byte, keyed bool, fn func(k, v []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != open {
		return fmt.Errorf("%w: %q expected", errSyntax, open)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == close {
		if skipSpace(b, i+1) != len(b) {
			return fmt.Errorf("%w: bytes after the end", errSyntax)
		}
		return nil
	}
	for {
		var k []byte
		if keyed {
			if i >= len(b) || b[i] != '"' {
				return fmt.Errorf("%w: key expected at byte %d", errSyntax, i)
			}
			j, err := skipString(b, i)
			if err != nil {
				return err
			}
			k = b[i:j]
			i = skipSpace(b, j)
			if i >= len(b) || b[i] != ':' {
				return fmt.Errorf("%w: ':' expected at byte %d", errSyntax, i)
			}
			i = skipSpace(b, i+1)
		}
		j, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if j == i {
			return fmt.Errorf("%w: empty value at byte %d", errSyntax, i)
		}
		if err := fn(k, b[i:j]); err != nil {
			return err
		}
		i = skipSpace(b, j)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == close:
			if skipSpace(b, i+1) != len(b) {
				return fmt.Errorf("%w: bytes after the end", errSyntax)
			}
			return nil
		default:
			return fmt.Errorf("%w: ',' or %q expected at byte %d", errSyntax, close, i)
		}
	}
}

// eachListed calls fn with each element of b, the elements of an array
// without its brackets (as a page holds them): what eachElement calls fn
// with for the array '[' b ']', and the same errors, without the copy that
// array would be.
func eachListed(b []byte, fn func(e []byte) error) error {
	i := skipSpace(b, 0)
	if i == len(b) {
		return nil
	}
	for {
		j, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if j == i {
			return fmt.Errorf("%w: empty value at byte %d", errSyntax, i)
		}
		if err := fn(b[i:j]); err != nil {
			return err
		}
		i = skipSpace(b, j)
		switch {
		case i == len(b):
			return nil
		case b[i] == ',':
			i = skipSpace(b, i+1)
		default:
			return fmt.Errorf("%w: ',' expected at byte %d", errSyntax, i)
		}
	}
}

// Elements calls fn with each element of the JSON array arr, verbatim
// (aliasing arr), in order.
func Elements(arr []byte, fn func(e []byte) error) error { return eachElement(arr, fn) }
