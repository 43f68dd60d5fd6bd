package record

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Tracker is what a writer knows of its log's latest chain: the latest
// revision's snapshot, kept as the pieces its records gave it (a full
// record's members, the values and elements its deltas set and appended),
// and the chain's sizes for the policy. Given the next snapshot as pieces
// (Member), it builds the next record from what differs — a delta, or a
// full record when the policy says so — without writing the snapshot out
// and without checksumming it whole: the delta's snap_len and snap_crc
// come from the pieces (CRCCombine). So a writer that knows which pieces
// changed appends at a cost that follows the change, not the session.
//
// The zero value knows no snapshot: the next record is full.
type Tracker struct {
	// Pages, when set, stores the pages of full records: their older
	// messages go into pages (PageBytes), so that a full record holds the
	// conversation's tail and one reference per page, however long the
	// conversation. Without it, full records hold every message inline.
	Pages PageStore

	d      *doc
	full   int // payload bytes of the chain's full record
	deltas int // line bytes of the chain's deltas
	n      int // number of deltas
}

// Member is one top-level member of the next snapshot, in order: its key
// (the JSON string as it appears, quotes included) and either its value
// (JSON, verbatim) or, with Grown set, the elements appended to the array
// the previous snapshot held under the same key (which it keeps whole).
//
// With Grown, Drop removes the last Drop messages of that array before
// Append (a rewind): the record is then a delta that drops them (format
// 5), or a full record of the shorter array. A drop that ends inside a
// page fails with ErrDropInPage and the tracker is unchanged: the caller
// gives the member's whole value instead.
type Member struct {
	Key    []byte
	Value  []byte
	Grown  bool
	Drop   int
	Append [][]byte
}

// Policy bounds a chain (FORMAT.md, "Chains"): a writer writes a delta only
// while the chain's bytes — its full record's payload and its deltas'
// lines, the new one included — stay within ChainBudgetNum/ChainBudgetDen
// of the new snapshot, its deltas' lines and the snapshot it rebuilds
// within the record cap, and its deltas as chainOpen says. (A full
// record with pages is small, so the snapshot a chain rebuilds reaches
// the cap only long after the chain began.) So loading the latest revision reads at
// most that, however long the history.
const ChainBudgetNum, ChainBudgetDen = 3, 2

// MaxChainDeltas is the number of deltas after which a writer ends a
// chain with a full record, once the chain's deltas outweigh its full
// record (FullWeight): a full record costs the log its payload, and is
// written only when the deltas since the last one have cost at least
// FullWeight times that, so full records add at most 1/FullWeight to what
// the deltas add to a log. A chain whose deltas are lighter goes on, up
// to HardMaxChainDeltas deltas; its bytes stay bounded by the budget
// above either way.
const MaxChainDeltas = 1000

// FullWeight is how many times its full record's payload a chain's
// deltas' lines reach before a chain past MaxChainDeltas ends.
const FullWeight = 2

// HardMaxChainDeltas bounds the deltas of any chain (what a load applies).
const HardMaxChainDeltas = 8 * MaxChainDeltas

// chainOpen reports whether the policy lets the chain take one more
// delta, by its count and its deltas' weight (MaxChainDeltas).
func (t *Tracker) chainOpen() bool {
	return t.n < MaxChainDeltas || (t.n < HardMaxChainDeltas && t.deltas < FullWeight*t.full)
}

// Known reports whether the tracker knows the latest snapshot (else the
// next record is full).
func (t *Tracker) Known() bool { return t.d != nil }

// Start starts a chain at a full record whose payload is snap (retained:
// the pieces point into it).
func (t *Tracker) Start(snap []byte) error {
	d, err := newDoc(snap)
	if err != nil {
		*t = Tracker{Pages: t.Pages}
		return fmt.Errorf("%w: snapshot is not a JSON object: %w", ErrDelta, err)
	}
	*t = Tracker{Pages: t.Pages, d: d, full: len(snap)}
	return nil
}

// Resume sets the tracker to a chain read back from a log: its full
// record's payload and its deltas' payloads and line lengths, in order
// (all retained). It checks what ApplyChain checks: each delta's result
// against its snap_len, and the snapshot the chain rebuilds, byte for
// byte, against the last delta's snap_crc. The revisions between are
// not the tracker's (it builds on the last), so their checksums are not
// computed: a resume of a chain of thousands of deltas costs applying
// them, not a checksum of each.
func (t *Tracker) Resume(full []byte, deltas [][]byte, lineBytes int) error {
	return t.ResumeWithin(full, deltas, lineBytes, 1<<62)
}

// ResumeWithin is Resume checking, as ApplyChain does, that no revision
// of the chain exceeds maxOut bytes (ErrTooLong). A reader that must
// rebuild the chain's snapshot and resume a writer on it (a recovery)
// applies the chain once: Snapshot writes out what ApplyChain returns.
func (t *Tracker) ResumeWithin(full []byte, deltas [][]byte, lineBytes, maxOut int) error {
	if err := t.Start(full); err != nil {
		return err
	}
	var ops deltaOps
	for i, delta := range deltas {
		var err error
		ops, err = parseDelta(delta)
		if err == nil {
			err = t.d.apply(ops, maxOut)
		}
		if err != nil {
			*t = Tracker{Pages: t.Pages}
			return fmt.Errorf("%w: delta %d: %w", ErrDelta, i+1, err)
		}
	}
	if len(deltas) > 0 && t.d.checksum() != ops.snapCRC {
		*t = Tracker{Pages: t.Pages}
		return fmt.Errorf("%w: delta %d: checksum mismatch", ErrDelta, len(deltas))
	}
	t.deltas, t.n = lineBytes, len(deltas)
	return nil
}

// Size returns the latest snapshot's size in bytes (0 when unknown).
func (t *Tracker) Size() int {
	if t.d == nil {
		return 0
	}
	return t.d.size()
}

// Snapshot writes the latest snapshot out (a new slice), nil when unknown.
func (t *Tracker) Snapshot() []byte {
	if t.d == nil {
		return nil
	}
	return t.d.appendTo(make([]byte, 0, t.d.size()))
}

// Value returns the latest snapshot's value under key (quoted), written
// out, and whether there is one.
func (t *Tracker) Value(key []byte) ([]byte, bool) {
	if t.d == nil {
		return nil, false
	}
	return valueOf(t.d, key)
}

func valueOf(d *doc, key []byte) ([]byte, bool) {
	m := d.index[string(key)]
	if m == nil {
		return nil, false
	}
	if len(m.app) == 0 {
		return m.val, true
	}
	one := &doc{members: []*member{m}}
	b := one.appendTo(nil)
	return b[len(m.key)+2 : len(b)-1], true // {key:value} -> value
}

// Versions are the format versions to write a record of each kind with;
// zero means the lowest that holds it (VersionOf).
type Versions struct{ Full, Delta int }

func (v Versions) of(kind string) int {
	n := v.Full
	if kind == KindDelta {
		n = v.Delta
	}
	return max(n, VersionOf(kind))
}

// ErrFullRecordTooLarge reports a next snapshot whose full record would
// exceed the record cap.
var ErrFullRecordTooLarge = errors.New("full record larger than the record cap")

// Next returns the line of the next record m (its Kind is set here, and
// its Version as v says) for the snapshot next describes, and makes it the latest: a delta
// when the tracker knows the latest snapshot and the chain policy allows
// one, else a full record. A full record is the snapshot written out; a
// delta is built from the members that differ, and its cost is theirs.
// maxRecord is the record cap: a full record above it fails with
// ErrFullRecordTooLarge, and the tracker is unchanged.
func (t *Tracker) Next(m Meta, next []Member, maxRecord int, v Versions) ([]byte, error) {
	// The latest snapshot with the drops made: what the grown members
	// grow (a copy of the pieces; the latest snapshot stays as it is).
	base := t.d
	var drops []dropOp
	for _, nm := range next {
		if !nm.Grown || nm.Drop <= 0 {
			continue
		}
		if t.d == nil {
			return nil, fmt.Errorf("%w: member %s drops from an array the tracker does not know", ErrDelta, nm.Key)
		}
		if base == t.d {
			base = t.d.clone()
		}
		bm := base.index[string(nm.Key)]
		if bm == nil || len(bm.val) < 2 || bm.val[0] != '[' {
			return nil, fmt.Errorf("%w: member %s drops from an array the latest snapshot does not hold", ErrDelta, nm.Key)
		}
		if err := bm.dropLast(nm.Drop); err != nil {
			return nil, err
		}
		base.sumOK = false
		drops = append(drops, dropOp{key: nm.Key, n: nm.Drop})
	}
	if t.d != nil && t.chainOpen() {
		m.Version = v.of(KindDelta)
		if drops != nil {
			m.Version = max(m.Version, Version5)
		}
		if line, ok := t.deltaLine(m, next, maxRecord, base, drops); ok {
			return line, nil
		}
	}
	// A full record: the snapshot written out, from the latest one's
	// pieces for grown members.
	payload, paged, err := t.fullPayload(base, next, maxRecord)
	if err != nil {
		return nil, err
	}
	m.Kind, m.Version = KindFull, v.of(KindFull)
	if paged {
		m.Version = max(m.Version, Version4)
	}
	line := Encode(m, payload)
	if err := t.Start(payload); err != nil {
		return nil, err
	}
	return line, nil
}

// deltaLine builds the delta from the latest snapshot to next and, when
// the policy allows it, applies it and returns its line.
func (t *Tracker) deltaLine(m Meta, next []Member, maxRecord int, old *doc, drops []dropOp) ([]byte, bool) {
	var ops deltaOps
	seen := make(map[string]bool, len(next))
	order := make([][]byte, 0, len(old.members)) // the order del and set leave
	for _, nm := range next {
		seen[string(nm.Key)] = true
	}
	for _, om := range old.members {
		if !seen[string(om.key)] {
			ops.del = append(ops.del, om.key)
		} else {
			order = append(order, om.key)
		}
	}
	for _, nm := range next {
		om := old.index[string(nm.Key)]
		switch {
		case nm.Grown:
			if om == nil || len(om.val) < 2 || om.val[0] != '[' {
				return nil, false // nothing to grow: not a delta
			}
			if len(nm.Append) > 0 {
				ops.app = append(ops.app, [2][]byte{nm.Key, bytes.Join(nm.Append, comma)})
				ops.appIdx = append(ops.appIdx, indexOfJoined(nm.Append))
			}
		case om == nil:
			order = append(order, nm.Key)
			ops.set = append(ops.set, [2][]byte{nm.Key, nm.Value})
		case len(om.app) > 0 || !bytes.Equal(om.val, nm.Value):
			ops.set = append(ops.set, [2][]byte{nm.Key, nm.Value})
		}
	}
	for i, nm := range next {
		if i >= len(order) || !bytes.Equal(order[i], nm.Key) {
			ops.keys = make([][]byte, len(next))
			for j, nm := range next {
				ops.keys[j] = nm.Key
			}
			break
		}
	}
	// The policy checked first on sizes computed from the pieces (the new
	// snapshot's exactly, the delta's payload from below): a delta that
	// cannot be written is not built.
	newSize, payloadMin := 2+len(next)-1, 0
	// The snapshot the chain's budget is measured against: the new one,
	// or for a rewind (drops) the one before it when that is larger, so
	// that shortening a conversation does not end a chain that its
	// longer revision kept within the budget (a rewind stays a few bytes;
	// a load reads at most the budget of a revision the chain holds).
	measure := 0
	if drops != nil {
		measure = t.d.size()
	}
	for _, nm := range next {
		om := old.index[string(nm.Key)]
		switch {
		case nm.Grown:
			newSize += om.size
			for i, e := range nm.Append {
				newSize += len(e)
				if i > 0 || !emptyArray(om.val) || len(om.app) > 0 {
					newSize++
				}
				payloadMin += len(e)
			}
		case om == nil || len(om.app) > 0 || !bytes.Equal(om.val, nm.Value):
			newSize += len(nm.Key) + 1 + len(nm.Value)
			payloadMin += len(nm.Key) + len(nm.Value)
		default:
			newSize += om.size
		}
	}
	if payloadMin >= newSize || newSize > maxRecord || t.deltas+payloadMin > maxRecord ||
		t.full+t.deltas+payloadMin > max(newSize, measure)*ChainBudgetNum/ChainBudgetDen {
		return nil, false
	}
	// The result, on a copy of the pieces (the latest snapshot stays as it
	// is if the delta is not written); a delta that changes nothing leaves
	// the pieces as they are, and they need no copy.
	nd := old
	if !ops.none() {
		if old == t.d {
			nd = old.clone()
		}
		if err := nd.apply(opsWithLen(ops, -1), 1<<62); err != nil {
			return nil, false
		}
	}
	size := nd.size()
	ops.snapLen, ops.snapCRC, ops.drop = size, nd.checksum(), drops
	payload := encodeDelta(ops)
	if len(payload) >= size {
		return nil, false // no smaller than the snapshot itself
	}
	m.Kind = KindDelta
	line := Encode(m, payload)
	budget := max(size, measure) * ChainBudgetNum / ChainBudgetDen
	if t.full+t.deltas+len(line) > budget || t.deltas+len(line) > maxRecord || size > maxRecord {
		return nil, false
	}
	t.d = nd
	t.deltas += len(line)
	t.n++
	return line, true
}

// opsWithLen returns ops with snapLen set to n; -1 skips apply's length
// check (the length is computed from the result).
func opsWithLen(ops deltaOps, n int) deltaOps {
	ops.snapLen = n
	return ops
}

// fullPayload writes out the snapshot next describes, its older messages
// in pages when t.Pages is set, and reports whether it holds a page.
func (t *Tracker) fullPayload(base *doc, next []Member, maxRecord int) ([]byte, bool, error) {
	paged := false
	n := 2
	vals := make([][]byte, len(next))
	for i, nm := range next {
		v := nm.Value
		if nm.Grown {
			var old []byte
			ok := base != nil
			if ok {
				old, ok = valueOf(base, nm.Key)
			}
			if !ok || len(old) < 2 || old[0] != '[' {
				return nil, false, fmt.Errorf("%w: member %s grows an array the latest snapshot does not hold", ErrDelta, nm.Key)
			}
			v = old
			if len(nm.Append) > 0 {
				var b []byte
				b = append(b, old[:len(old)-1]...)
				if !emptyArray(old) {
					b = append(b, ',')
				}
				b = append(b, bytes.Join(nm.Append, comma)...)
				v = append(b, ']')
			}
		}
		if limit := pageLimit(maxRecord); t.Pages != nil && string(nm.Key) == messagesKey && len(v) > limit {
			var elems [][]byte
			if err := eachElement(v, func(e []byte) error { elems = append(elems, e); return nil }); err != nil {
				return nil, false, fmt.Errorf("%w: member %s: %w", ErrDelta, nm.Key, err)
			}
			elems, p, err := paginate(elems, t.Pages, limit)
			if err != nil {
				return nil, false, err
			}
			v, paged = joinArray(elems), paged || p
		} else if string(nm.Key) == messagesKey && MayHavePages(v) {
			paged = paged || hasPage(v)
		}
		vals[i] = v
		n += len(nm.Key) + 1 + len(v)
		if i > 0 {
			n++
		}
	}
	if n > maxRecord {
		return nil, false, fmt.Errorf("%w: %d bytes, cap %d", ErrFullRecordTooLarge, n, maxRecord)
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, nm := range next {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, nm.Key...)
		b = append(b, ':')
		b = append(b, vals[i]...)
	}
	return append(b, '}'), paged, nil
}

// indexOfJoined indexes the list elems make joined by commas.
func indexOfJoined(elems [][]byte) *listIndex {
	x := &listIndex{ends: make([]int, len(elems)), msgs: make([]int, len(elems))}
	end := -1
	n := 0
	for i, e := range elems {
		end += 1 + len(e)
		n++
		if IsPage(e) {
			if p, err := ParsePage(e); err == nil {
				n += p.Messages - 1
			}
		}
		x.ends[i], x.msgs[i] = end, n
	}
	return x
}

// encodeDelta writes a delta's JSON (see delta.go), keys in order.
func encodeDelta(ops deltaOps) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"snap_len":`...)
	b = strconv.AppendInt(b, int64(ops.snapLen), 10)
	b = append(b, `,"snap_crc":"`...)
	b = appendHex8(b, ops.snapCRC)
	b = append(b, '"')
	list := func(name string, l [][]byte) {
		if l == nil {
			return
		}
		b = append(b, `,"`+name+`":[`...)
		b = append(b, bytes.Join(l, comma)...)
		b = append(b, ']')
	}
	object := func(name string, kvs [][2][]byte, open, close string) {
		if kvs == nil {
			return
		}
		b = append(b, `,"`+name+`":{`...)
		for i, kv := range kvs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, kv[0]...)
			b = append(b, ':')
			b = append(b, open...)
			b = append(b, kv[1]...)
			b = append(b, close...)
		}
		b = append(b, '}')
	}
	list("keys", ops.keys)
	list("del", ops.del)
	object("set", ops.set, "", "")
	if ops.drop != nil {
		b = append(b, `,"drop":{`...)
		for i, op := range ops.drop {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, op.key...)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(op.n), 10)
		}
		b = append(b, '}')
	}
	object("append", ops.app, "[", "]")
	return append(b, '}')
}

// Members splits obj, a JSON object, into its top-level members, in
// order (keys quoted, values verbatim; they alias obj).
func Members(obj []byte) ([]Member, error) {
	var out []Member
	err := eachMember(obj, func(k, v []byte) error {
		out = append(out, Member{Key: k, Value: v})
		return nil
	})
	return out, err
}
