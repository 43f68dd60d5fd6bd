package record

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// A delta turns one snapshot (its base: the previous revision's) into the
// next, at the level of the raw JSON of the snapshot's top-level object.
// It never decodes values: every value is copied byte for byte, so numbers
// keep their exact digits. It is one JSON object, keys in this order, the
// optional ones present only when needed:
//
//	{"snap_len":4711,"snap_crc":"1c291ca3",
//	 "keys":["format","id",…],                    optional
//	 "del":["pending"],                           optional
//	 "set":{"counters":{…},"state":"running"},    optional
//	 "drop":{"messages":3},                       optional (format 5)
//	 "append":{"messages":[{…},{…}]}}             optional
//
// Applied to the base's top-level members, in order:
//
//	del     removes each key (each must be present);
//	set     replaces the value of each present key in place, and adds
//	        each absent key after the last member;
//	drop    removes the last n messages of each key's value, an array: an
//	        element counts one, a page reference (pages.go) the messages
//	        its page holds, and n must end at an element, never inside a
//	        page (a rewind: drop.go);
//	append  appends the elements to each key's value, an array;
//	keys    (when present) orders the members: it lists every key of the
//	        result exactly once.
//
// The result is the object `{` key `:` value (`,` key `:` value)… `}`,
// without whitespace between members — the compact form sessnap.Marshal
// writes. snap_len is its length in bytes and snap_crc its CRC-32C, so a
// reader checks that it rebuilt exactly the bytes the writer had. A key or
// array element is the JSON text as it appears in the snapshot.

// ErrDelta reports a delta that does not apply to its base.
var ErrDelta = errors.New("delta does not apply")

// member is one top-level member of an object being rebuilt: its key
// (quoted, as it appears), its value, and array elements appended to it.
type member struct {
	key []byte
	val []byte
	app [][]byte // element lists (without brackets) appended to val, an array
	// idx[i] indexes the elements of app[i] once a drop needed them (nil
	// until then; drop.go); it is as long as app.
	idx  []*listIndex
	size int // serialized size of key:value
	// The checksum of the serialized member, computed once and kept: crc
	// when crcOK; for an array being appended to, open is the checksum of
	// its bytes without the closing bracket, with the first folded
	// element lists of app in it.
	crc    uint32
	crcOK  bool
	open   uint32
	folded int
	openOK bool
	// base is open before any element list was folded, and opens[i] open
	// after folding app[0..i]: a drop that keeps the first lists goes
	// back to them instead of checksumming the array again.
	base  uint32
	opens []uint32
	// shift is crcShift(size) when shiftOf is size+1: a document's
	// checksum combines its members' with it, and most members keep
	// their size from revision to revision.
	shift   uint32
	shiftOf int
}

// checksum returns the CRC-32C of the serialized member. After an append
// its cost is the appended bytes: the open array's checksum is extended.
func (m *member) checksum() uint32 {
	if m.crcOK {
		return m.crc
	}
	if len(m.app) == 0 {
		c := crc32.Update(0, Castagnoli, m.key)
		c = crc32.Update(c, Castagnoli, colon)
		m.crc, m.crcOK = crc32.Update(c, Castagnoli, m.val), true
		return m.crc
	}
	if !m.openOK {
		c := crc32.Update(0, Castagnoli, m.key)
		c = crc32.Update(c, Castagnoli, colon)
		m.open, m.folded, m.openOK = crc32.Update(c, Castagnoli, m.val[:len(m.val)-1]), 0, true
		m.base, m.opens = m.open, m.opens[:0]
	}
	for ; m.folded < len(m.app); m.folded++ {
		if m.folded > 0 || !emptyArray(m.val) {
			m.open = crc32.Update(m.open, Castagnoli, comma)
		}
		m.open = crc32.Update(m.open, Castagnoli, m.app[m.folded])
		m.opens = append(m.opens, m.open)
	}
	m.crc, m.crcOK = crc32.Update(m.open, Castagnoli, closeBracket), true
	return m.crc
}

var (
	colon        = []byte{':'}
	comma        = []byte{','}
	closeBracket = []byte{']'}
	openBrace    = []byte{'{'}
	closeBrace   = []byte{'}'}
)

// grow appends the element list l to the member's array and adds its
// bytes to its size: the cost of an append is its own, not that of the
// lists appended before it (a chain of thousands of deltas applies in
// time linear in its length).
func (m *member) grow(l []byte) {
	if len(m.app) > 0 || !emptyArray(m.val) {
		m.size++ // the comma before it
	}
	m.size += len(l)
	m.app = append(m.app, l)
}

// resize sets the member's size from its key, value and lists.
func (m *member) resize() {
	m.size = len(m.key) + 1 + len(m.val)
	for i, a := range m.app {
		m.size += len(a)
		if i > 0 || !emptyArray(m.val) {
			m.size++ // the comma before it
		}
	}
}

// doc is an object being rebuilt from a base and deltas.
type doc struct {
	members []*member
	index   map[string]*member
	// sum is the checksum once computed (sumOK); apply, the only change
	// made to a doc, clears it.
	sum   uint32
	sumOK bool
}

// checksum returns the CRC-32C of the serialized object, combined from
// its members' checksums: after a delta its cost is the changed members'
// bytes and one combination per member, not the object's size.
func (d *doc) checksum() uint32 {
	if d.sumOK {
		return d.sum
	}
	c := crc32.Update(0, Castagnoli, openBrace)
	for i, m := range d.members {
		if i > 0 {
			c = crc32.Update(c, Castagnoli, comma)
		}
		if m.size > 0 {
			if m.shiftOf != m.size+1 {
				m.shift, m.shiftOf = crcShift(int64(m.size)), m.size+1
			}
			c = mulMod(m.shift, c) ^ m.checksum()
		}
	}
	d.sum, d.sumOK = crc32.Update(c, Castagnoli, closeBrace), true
	return d.sum
}

func (d *doc) size() int {
	n := 2 // braces
	for i, m := range d.members {
		if i > 0 {
			n++
		}
		n += m.size
	}
	return n
}

// pieces calls fn with the serialized object's bytes, piece by piece, in
// order, until fn returns false.
func (d *doc) pieces(fn func(p []byte) bool) {
	if !fn([]byte{'{'}) {
		return
	}
	for i, m := range d.members {
		if i > 0 && !fn([]byte{','}) {
			return
		}
		if !fn(m.key) || !fn([]byte{':'}) {
			return
		}
		if len(m.app) == 0 {
			if !fn(m.val) {
				return
			}
			continue
		}
		if !fn(m.val[:len(m.val)-1]) {
			return
		}
		for i, a := range m.app {
			if (i > 0 || !emptyArray(m.val)) && !fn([]byte{','}) {
				return
			}
			if !fn(a) {
				return
			}
		}
		if !fn([]byte{']'}) {
			return
		}
	}
	fn([]byte{'}'})
}

func (d *doc) appendTo(b []byte) []byte {
	d.pieces(func(p []byte) bool {
		b = append(b, p...)
		return true
	})
	return b
}

// equal reports whether the serialized object is exactly b, without
// building it.
func (d *doc) equal(b []byte) bool {
	ok := true
	d.pieces(func(p []byte) bool {
		if len(p) > len(b) || !bytes.Equal(p, b[:len(p)]) {
			ok = false
			return false
		}
		b = b[len(p):]
		return true
	})
	return ok && len(b) == 0
}

// clone returns a copy of d that apply can change without changing d.
func (d *doc) clone() *doc {
	c := &doc{members: make([]*member, len(d.members)), index: make(map[string]*member, len(d.members))}
	ms := make([]member, len(d.members)) // one allocation for all the copies
	for i, m := range d.members {
		cm := &ms[i]
		*cm = *m
		cm.app = append([][]byte(nil), m.app...)
		cm.idx = append([]*listIndex(nil), m.idx...) // indexes are never changed, only replaced
		cm.opens = append([]uint32(nil), m.opens...)
		c.members[i] = cm
		c.index[string(cm.key)] = cm
	}
	return c
}

func newDoc(obj []byte) (*doc, error) {
	d := &doc{}
	err := eachMember(obj, func(k, v []byte) error {
		if d.index == nil {
			d.index = map[string]*member{}
		}
		if d.index[string(k)] != nil {
			return fmt.Errorf("duplicate key %s", k)
		}
		m := &member{key: k, val: v}
		m.resize()
		d.members = append(d.members, m)
		d.index[string(k)] = m
		return nil
	})
	if d.index == nil {
		d.index = map[string]*member{}
	}
	return d, err
}

// deltaOps is a parsed delta.
// none reports whether ops change nothing (a delta that only records a
// new revision of the same snapshot).
func (ops *deltaOps) none() bool {
	return ops.keys == nil && len(ops.del) == 0 && len(ops.set) == 0 && len(ops.drop) == 0 && len(ops.app) == 0
}

type deltaOps struct {
	snapLen int
	snapCRC uint32
	keys    [][]byte // nil when absent
	del     [][]byte
	set     [][2][]byte
	drop    []dropOp
	app     [][2][]byte // key, element list without brackets
	// appIdx, when set (a writer's own delta), indexes the elements of
	// each app list; a parsed delta has none.
	appIdx []*listIndex
}

// dropOp is one member of a delta's drop: remove the last n messages of
// the array under key.
type dropOp struct {
	key []byte
	n   int
}

var deltaKeys = []string{`"snap_len"`, `"snap_crc"`, `"keys"`, `"del"`, `"set"`, `"drop"`, `"append"`}

func parseDelta(b []byte) (deltaOps, error) {
	var ops deltaOps
	next := 0 // index in deltaKeys of the next key allowed
	err := eachMember(b, func(k, v []byte) error {
		i := next
		for i < len(deltaKeys) && deltaKeys[i] != string(k) {
			i++
		}
		if i == len(deltaKeys) {
			return fmt.Errorf("unexpected key %s", k)
		}
		if next < 2 && i != next {
			return fmt.Errorf("key %s where %s was expected", k, deltaKeys[next])
		}
		next = i + 1
		switch i {
		case 0:
			n, err := strconv.ParseUint(string(v), 10, 31)
			if err != nil || len(v) > 1 && v[0] == '0' {
				return fmt.Errorf("bad snap_len %q", v)
			}
			ops.snapLen = int(n)
		case 1:
			if len(v) != 10 || v[0] != '"' || v[9] != '"' {
				return fmt.Errorf("bad snap_crc %q", v)
			}
			sum, ok := parseHex8(v[1:9])
			if !ok {
				return fmt.Errorf("bad snap_crc %q", v)
			}
			ops.snapCRC = sum
		case 2, 3:
			list := [][]byte{}
			err := eachElement(v, func(e []byte) error {
				if e[0] != '"' {
					return fmt.Errorf("key list holds a non-string %.20q", e)
				}
				list = append(list, e)
				return nil
			})
			if err != nil {
				return err
			}
			if i == 2 {
				ops.keys = list
			} else {
				ops.del = list
			}
		case 4:
			return eachMember(v, func(k, v []byte) error {
				ops.set = append(ops.set, [2][]byte{k, v})
				return nil
			})
		case 5:
			return eachMember(v, func(k, v []byte) error {
				n, err := strconv.ParseUint(string(v), 10, 31)
				if err != nil || n == 0 || v[0] == '0' {
					return fmt.Errorf("drop from %s is not a positive count: %.20q", k, v)
				}
				ops.drop = append(ops.drop, dropOp{key: k, n: int(n)})
				return nil
			})
		case 6:
			return eachMember(v, func(k, v []byte) error {
				if len(v) < 2 || v[0] != '[' || emptyArray(v) {
					return fmt.Errorf("append to %s is not a non-empty array", k)
				}
				ops.app = append(ops.app, [2][]byte{k, v[1 : len(v)-1]})
				return nil
			})
		}
		return nil
	})
	if err == nil && next < 2 {
		err = errors.New("snap_len and snap_crc are missing")
	}
	return ops, err
}

// apply applies ops to d, checking the result's size against the delta's
// snap_len and maxOut.
func (d *doc) apply(ops deltaOps, maxOut int) error {
	d.sumOK = false
	if ops.snapLen > maxOut {
		return fmt.Errorf("%w: result of %d bytes exceeds the cap of %d", ErrTooLong, ops.snapLen, maxOut)
	}
	for _, k := range ops.del {
		m := d.index[string(k)]
		if m == nil {
			return fmt.Errorf("del: no key %s", k)
		}
		delete(d.index, string(k))
		for i, x := range d.members {
			if x == m {
				d.members = append(d.members[:i], d.members[i+1:]...)
				break
			}
		}
	}
	for _, kv := range ops.set {
		m := d.index[string(kv[0])]
		if m == nil {
			m = &member{key: kv[0]}
			d.index[string(kv[0])] = m
			d.members = append(d.members, m)
		}
		m.val, m.app, m.idx = kv[1], nil, nil
		m.crcOK, m.openOK = false, false
		m.resize()
	}
	for _, op := range ops.drop {
		m := d.index[string(op.key)]
		if m == nil || len(m.val) < 2 || m.val[0] != '[' || m.val[len(m.val)-1] != ']' {
			return fmt.Errorf("drop: key %s is not an array", op.key)
		}
		if err := m.dropLast(op.n); err != nil {
			return fmt.Errorf("drop from %s: %w", op.key, err)
		}
	}
	for i, kv := range ops.app {
		m := d.index[string(kv[0])]
		if m == nil || len(m.val) < 2 || m.val[0] != '[' || m.val[len(m.val)-1] != ']' {
			return fmt.Errorf("append: key %s is not an array", kv[0])
		}
		var x *listIndex
		if i < len(ops.appIdx) {
			x = ops.appIdx[i]
		}
		m.grow(kv[1])
		m.idx = append(m.idx, x)
		m.crcOK = false
	}
	if ops.keys != nil {
		if len(ops.keys) != len(d.members) {
			return fmt.Errorf("keys lists %d keys, the object has %d", len(ops.keys), len(d.members))
		}
		seen := make(map[*member]bool, len(ops.keys))
		for i, k := range ops.keys {
			m := d.index[string(k)]
			if m == nil || seen[m] {
				return fmt.Errorf("keys: %s is absent or listed twice", k)
			}
			seen[m] = true
			d.members[i] = m
		}
	}
	if n := d.size(); ops.snapLen >= 0 && n != ops.snapLen {
		return fmt.Errorf("result is %d bytes, the delta says %d", n, ops.snapLen)
	}
	return nil
}

// Apply returns the snapshot that delta makes of base. It never allocates
// more than maxOut bytes for the result (a larger result is an error, as
// is anything that does not rebuild exactly the bytes the delta's length
// and checksum describe), and never panics, whatever its input.
func Apply(base, delta []byte, maxOut int) ([]byte, error) {
	return ApplyChain(base, [][]byte{delta}, maxOut)
}

// ApplyChain applies deltas in order to base and returns the result. Its
// cost is reading base and the deltas once, not once per delta. Every
// intermediate result's length is checked against its delta and maxOut
// (so nothing beyond maxOut is ever allocated); the final result's checksum
// against the last delta. With no deltas it returns base.
func ApplyChain(base []byte, deltas [][]byte, maxOut int) ([]byte, error) {
	if len(deltas) == 0 {
		return base, nil
	}
	d, err := newDoc(base)
	if err != nil {
		return nil, fmt.Errorf("%w: base: %w", ErrDelta, err)
	}
	var ops deltaOps
	for i, delta := range deltas {
		if ops, err = parseDelta(delta); err != nil {
			return nil, fmt.Errorf("%w: delta %d: %w", ErrDelta, i+1, err)
		}
		if err := d.apply(ops, maxOut); err != nil {
			if errors.Is(err, ErrTooLong) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: delta %d: %w", ErrDelta, i+1, err)
		}
	}
	if sum := d.checksum(); sum != ops.snapCRC {
		return nil, fmt.Errorf("%w: result checksum %08x, the delta says %08x", ErrDelta, sum, ops.snapCRC)
	}
	return d.appendTo(make([]byte, 0, ops.snapLen)), nil
}

// Diff returns a delta that turns prev into next, or ok false when there
// is none worth writing: either is not a JSON object with distinct keys,
// the delta would not be smaller than next, or applying it does not give
// next byte for byte (next is not in the compact form Apply writes).
// Diff and Apply are deterministic: the same inputs give the same bytes.
func Diff(prev, next []byte) (delta []byte, ok bool) {
	p, err := newDoc(prev)
	if err != nil {
		return nil, false
	}
	n, err := newDoc(next)
	if err != nil {
		return nil, false
	}
	var del, keys [][]byte
	var set, app [][2][]byte
	var order [][]byte // the order del and set leave, to compare with next's
	for _, m := range p.members {
		if n.index[string(m.key)] == nil {
			del = append(del, m.key)
		} else {
			order = append(order, m.key)
		}
	}
	for _, m := range n.members {
		old := p.index[string(m.key)]
		switch {
		case old == nil:
			order = append(order, m.key)
			set = append(set, [2][]byte{m.key, m.val})
		case bytes.Equal(old.val, m.val):
		case appended(old.val, m.val) != nil:
			app = append(app, [2][]byte{m.key, appended(old.val, m.val)})
		default:
			set = append(set, [2][]byte{m.key, m.val})
		}
	}
	for i, m := range n.members {
		if !bytes.Equal(order[i], m.key) {
			keys = make([][]byte, len(n.members))
			for j, m := range n.members {
				keys[j] = m.key
			}
			break
		}
	}
	b := encodeDelta(deltaOps{snapLen: len(next), snapCRC: crc32.Checksum(next, Castagnoli), keys: keys, del: del, set: set, app: app})
	if len(b) >= len(next) {
		return nil, false
	}
	// Check that the delta, as a reader parses and applies it, rebuilds
	// next byte for byte (which also makes its snap_crc right), comparing
	// piece by piece rather than building a copy of next.
	ops, err := parseDelta(b)
	if err != nil {
		return nil, false
	}
	if q := p.clone(); q.apply(ops, len(next)) != nil || !q.equal(next) {
		return nil, false
	}
	return b, true
}

// appended returns the elements (without brackets) that next, an array,
// adds after the elements of old, an array that is a prefix of it, or nil.
func appended(old, next []byte) []byte {
	if len(old) < 2 || old[0] != '[' || old[len(old)-1] != ']' || len(next) <= len(old) || next[len(next)-1] != ']' {
		return nil
	}
	if emptyArray(old) {
		if old[1] != ']' || next[0] != '[' {
			return nil
		}
		return next[1 : len(next)-1]
	}
	if !bytes.HasPrefix(next, old[:len(old)-1]) || next[len(old)-1] != ',' {
		return nil
	}
	return next[len(old) : len(next)-1]
}

// emptyArray reports whether v, an array, has no elements.
func emptyArray(v []byte) bool {
	return len(bytes.TrimLeft(v[1:len(v)-1], " \t\r\n")) == 0
}

// DeltaMessages returns the messages a delta payload adds to the
// snapshot's conversation or sets it to, as one JSON array (nil when it
// touches neither): what a checker of the content the delta references
// reads, at the cost of the delta.
func DeltaMessages(payload []byte) ([]byte, error) {
	ops, err := parseDelta(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDelta, err)
	}
	var elems [][]byte
	for _, kv := range ops.set {
		if string(kv[0]) == messagesKey && len(kv[1]) > 1 && kv[1][0] == '[' && !emptyArray(kv[1]) {
			elems = append(elems, kv[1][1:len(kv[1])-1])
		}
	}
	for _, kv := range ops.app {
		if string(kv[0]) == messagesKey {
			elems = append(elems, kv[1])
		}
	}
	if elems == nil {
		return nil, nil
	}
	return joinArray(elems), nil
}
