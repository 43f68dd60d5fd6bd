package record

import (
	"errors"
	"fmt"
)

// MessageCount returns how many messages the snapshot that a record
// rebuilds holds, read from the record's payload without rebuilding the
// snapshot: a full record's messages array (a page counts its messages),
// or for a delta the count of the revision before it, prev, changed as
// the delta changes the array. kept is how many of the previous
// revision's messages the record keeps as they were: all of them (prev)
// for a delta that appends to the array or leaves it alone, none for one
// that replaces or removes it. A full record does not say; conversations
// only grow, so it counts as keeping as many as both revisions hold.
func MessageCount(kind string, payload []byte, prev int) (n, kept int, err error) {
	switch kind {
	case KindFull:
		n, err = arrayCount(payload)
		return n, min(prev, n), err
	case KindDelta:
		ops, err := parseDelta(payload)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %w", ErrFraming, err)
		}
		n = prev
		for _, k := range ops.del {
			if string(k) == messagesKey {
				n = 0
			}
		}
		for _, kv := range ops.set {
			if string(kv[0]) == messagesKey {
				if n, err = countElements(kv[1]); err != nil {
					return 0, 0, err
				}
				return n, 0, nil
			}
		}
		if n == 0 {
			prev = 0
		}
		for _, kv := range ops.app {
			if string(kv[0]) == messagesKey {
				add, err := countElements(append(append([]byte{'['}, kv[1]...), ']'))
				if err != nil {
					return 0, 0, err
				}
				n += add
			}
		}
		return n, min(prev, n), nil
	}
	return 0, 0, fmt.Errorf("%w: no messages in a %s record", ErrFraming, kind)
}

// arrayCount counts the messages of a snapshot's JSON.
func arrayCount(snap []byte) (int, error) {
	n, found := 0, false
	err := eachMember(snap, func(k, v []byte) error {
		if string(k) != messagesKey {
			return nil
		}
		found = true
		var err error
		n, err = countElements(v)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrFraming, err)
	}
	if !found {
		return 0, nil
	}
	return n, nil
}

var errNotArray = errors.New("messages is not an array")

// countElements counts the messages of a messages array: one an element,
// a page its messages.
func countElements(arr []byte) (int, error) {
	if len(arr) == 0 || arr[0] != '[' {
		if string(arr) == "null" {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: %w", ErrFraming, errNotArray)
	}
	n := 0
	err := eachElement(arr, func(e []byte) error {
		if !IsPage(e) {
			n++
			return nil
		}
		p, err := ParsePage(e)
		if err != nil {
			return err
		}
		n += p.Messages
		return nil
	})
	return n, err
}

// MemberChange returns what a record makes of the top-level member key
// (quoted, as `"title"`) of its snapshot: its value and true when the
// record sets it (a full record always does: nil for a member it lacks),
// nil and true when a delta removes it, nil and false when a delta leaves
// it as it was.
func MemberChange(kind string, payload []byte, key string) (val []byte, changed bool, err error) {
	switch kind {
	case KindFull:
		err = eachMember(payload, func(k, v []byte) error {
			if string(k) == key {
				val = v
			}
			return nil
		})
		if err != nil {
			return nil, false, fmt.Errorf("%w: %w", ErrFraming, err)
		}
		return val, true, nil
	case KindDelta:
		ops, err := parseDelta(payload)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %w", ErrFraming, err)
		}
		for _, kv := range ops.set {
			if string(kv[0]) == key {
				return kv[1], true, nil
			}
		}
		for _, k := range ops.del {
			if string(k) == key {
				return nil, true, nil
			}
		}
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("%w: no snapshot in a %s record", ErrFraming, kind)
}
