package record

import (
	"errors"
	"fmt"
)

// A rewind makes a revision whose conversation is the first messages of
// the previous one. Its delta drops the last messages ("drop", delta.go)
// instead of setting the shorter array, so that the record is a few bytes
// and building it costs the dropped messages, not the conversation.
//
// The array's pieces (member.val and the element lists of member.app)
// are cut from the end. A list's elements are found by scanning it once
// (listIndex, kept until the list changes); the lists a writer appended
// itself come indexed. A cut inside val, the array a full record or a set
// gave, makes val empty and the kept elements its first list, so that
// nothing is copied. A checksum after a cut goes back to the one kept for
// the lists before the cut (member.opens) and folds in the rest.

// ErrDropInPage reports a drop that would end inside a page: the pieces
// cannot rebuild that array without the page's content.
var ErrDropInPage = errors.New("drop ends inside a page")

// listIndex indexes the elements of an element list (without brackets):
// ends[i] is the offset after element i, msgs[i] the messages elements
// 0..i hold (a page reference holds its page's).
type listIndex struct {
	ends []int
	msgs []int
}

func (x *listIndex) count() int {
	if len(x.msgs) == 0 {
		return 0
	}
	return x.msgs[len(x.msgs)-1]
}

// indexList scans list, elements separated by commas (whitespace allowed
// between them), and indexes it.
func indexList(list []byte) (*listIndex, error) {
	x := &listIndex{}
	i := skipSpace(list, 0)
	total := 0
	for i < len(list) {
		j, err := skipValue(list, i)
		if err != nil {
			return nil, err
		}
		if j == i {
			return nil, fmt.Errorf("%w: empty value at byte %d", errSyntax, i)
		}
		n := 1
		if e := list[i:j]; IsPage(e) {
			p, err := ParsePage(e)
			if err != nil {
				return nil, err
			}
			n = p.Messages
		}
		total += n
		x.ends, x.msgs = append(x.ends, j), append(x.msgs, total)
		i = skipSpace(list, j)
		if i == len(list) {
			break
		}
		if list[i] != ',' {
			return nil, fmt.Errorf("%w: ',' expected at byte %d", errSyntax, i)
		}
		i = skipSpace(list, i+1)
		if i == len(list) {
			return nil, fmt.Errorf("%w: value expected at end", errSyntax)
		}
	}
	return x, nil
}

// indexOf returns the index of list i of m.app, building it when needed.
func (m *member) indexOf(i int) (*listIndex, error) {
	if m.idx[i] == nil {
		x, err := indexList(m.app[i])
		if err != nil {
			return nil, err
		}
		m.idx[i] = x
	}
	return m.idx[i], nil
}

// dropLast removes the last n messages of the member's array. It fails,
// changing nothing that matters (the member is the caller's to throw
// away), when the array holds fewer or n ends inside a page.
func (m *member) dropLast(n int) error {
	if n <= 0 {
		return nil
	}
	if !emptyArray(m.val) {
		// val becomes the first list: val "[]" and its elements a list
		// before the others.
		m.app = append([][]byte{m.val[1 : len(m.val)-1]}, m.app...)
		m.idx = append([]*listIndex{nil}, m.idx...)
		m.val = emptyArrayValue
		m.openOK = false
	}
	for n > 0 {
		last := len(m.app) - 1
		if last < 0 {
			return fmt.Errorf("%w: %d messages more than the array holds", ErrDelta, n)
		}
		x, err := m.indexOf(last)
		if err != nil {
			return err
		}
		total := x.count()
		if n >= total {
			m.app, m.idx, n = m.app[:last], m.idx[:last], n-total
			continue
		}
		keep := total - n
		e := 0 // the elements kept: those whose messages end at keep
		for e < len(x.msgs) && x.msgs[e] < keep {
			e++
		}
		if x.msgs[e] != keep {
			return ErrDropInPage
		}
		m.app[last] = m.app[last][:x.ends[e]]
		m.idx[last] = &listIndex{ends: x.ends[: e+1 : e+1], msgs: x.msgs[: e+1 : e+1]}
		n = 0
	}
	if m.openOK {
		// The lists before the cut keep their checksums; the list cut (if
		// any) and those after are folded again.
		f := max(0, min(m.folded, len(m.app)-1, len(m.opens)))
		m.folded, m.opens = f, m.opens[:f]
		if f > 0 {
			m.open = m.opens[f-1]
		} else {
			m.open = m.base
		}
	}
	m.crcOK = false
	m.resize()
	return nil
}

var emptyArrayValue = []byte("[]")
