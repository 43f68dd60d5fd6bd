package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Conversation follows a history's conversation record by record, from
// the records' payloads, without rebuilding snapshots: it keeps the raw
// JSON element of each message (nil where a page it could not match
// stands for it) and says, for each record, how many messages its
// snapshot holds and how many of the previous revision's it keeps
// unchanged. A page (pages.go) keeps its run of messages when the
// previous elements of that run are its content (its SHA-256 says).
type Conversation struct {
	elems [][]byte
}

// Apply reads the next record (a full record or a delta) and returns its
// snapshot's message count n and how many of the previous revision's
// messages it keeps, from the first, byte for byte.
func (c *Conversation) Apply(kind string, payload []byte) (n, kept int, err error) {
	switch kind {
	case KindFull:
		arr, found, err := messagesOf(payload)
		if err != nil {
			return 0, 0, err
		}
		if !found {
			arr = nil
		}
		return c.replace(arr)
	case KindDelta:
		ops, err := parseDelta(payload)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %w", ErrFraming, err)
		}
		for _, kv := range ops.set {
			if string(kv[0]) == messagesKey {
				return c.replace(kv[1])
			}
		}
		for _, k := range ops.del {
			if string(k) == messagesKey {
				return c.replace(nil)
			}
		}
		for _, op := range ops.drop {
			if string(op.key) != messagesKey {
				continue
			}
			if op.n > len(c.elems) {
				return 0, 0, fmt.Errorf("%w: drop of %d messages from %d", ErrFraming, op.n, len(c.elems))
			}
			c.elems = c.elems[: len(c.elems)-op.n : len(c.elems)-op.n]
		}
		kept = len(c.elems)
		for _, kv := range ops.app {
			if string(kv[0]) != messagesKey {
				continue
			}
			err := eachElement(append(append([]byte{'['}, kv[1]...), ']'), func(e []byte) error {
				c.elems = append(c.elems, bytes.Clone(e))
				return nil
			})
			if err != nil {
				return 0, 0, fmt.Errorf("%w: %w", ErrFraming, err)
			}
		}
		return len(c.elems), kept, nil
	}
	return 0, 0, fmt.Errorf("%w: no messages in a %s record", ErrFraming, kind)
}

// Elems returns the raw JSON of the conversation's messages from the
// from-th on, as the records gave them (nil for a message it does not
// know: one before StartAt's point, or in a page it could not match). The
// elements are the Conversation's: valid until its next Apply.
func (c *Conversation) Elems(from int) [][]byte {
	if from >= len(c.elems) {
		return nil
	}
	return c.elems[from:]
}

// Reset forgets the conversation (after revisions a repair set aside).
func (c *Conversation) Reset() { c.elems = nil }

// StartAt makes the conversation n messages whose elements are not
// known, for a reader that starts after revision 1: a full record or a
// replaced array then keeps none of them.
func (c *Conversation) StartAt(n int) { c.elems = make([][]byte, n) }

// replace makes arr (a messages array, or nil for none) the
// conversation.
func (c *Conversation) replace(arr []byte) (n, kept int, err error) {
	var next [][]byte
	kept, same := 0, true
	if len(arr) > 0 && string(arr) != "null" {
		if arr[0] != '[' {
			return 0, 0, fmt.Errorf("%w: %w", ErrFraming, errNotArray)
		}
		err = eachElement(arr, func(e []byte) error {
			at := len(next)
			if !IsPage(e) {
				if same && at < len(c.elems) && c.elems[at] != nil && bytes.Equal(c.elems[at], e) {
					next = append(next, c.elems[at])
					kept++
				} else {
					same = false
					next = append(next, bytes.Clone(e))
				}
				return nil
			}
			p, err := ParsePage(e)
			if err != nil {
				return err
			}
			if same && at+p.Messages <= len(c.elems) && pageOf(c.elems[at:at+p.Messages]) == p.SHA256 {
				next = append(next, c.elems[at:at+p.Messages]...)
				kept += p.Messages
				return nil
			}
			same = false
			for range p.Messages {
				next = append(next, nil) // not read: a page this history did not build
			}
			return nil
		})
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %w", ErrFraming, err)
		}
	}
	c.elems = next
	return len(next), kept, nil
}

// pageOf is the SHA-256 of the page that holds elems, "" when one is not
// known.
func pageOf(elems [][]byte) string {
	h := sha256.New()
	for i, e := range elems {
		if e == nil {
			return ""
		}
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write(e)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// messagesOf returns the messages member of a snapshot's JSON.
func messagesOf(snap []byte) (arr []byte, found bool, err error) {
	err = eachMember(snap, func(k, v []byte) error {
		if string(k) == messagesKey {
			arr, found = v, true
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrFraming, err)
	}
	return arr, found, nil
}

var errNotArray = errors.New("messages is not an array")

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
