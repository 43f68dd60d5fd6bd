package redact

import "slices"

// The prefilter finds where the rules' keywords occur in one pass over a
// string, so that a regular expression runs only near a keyword, and not
// at all over the many strings that hold none. Each keyword is found by
// one of its trigrams (three bytes in a row), its rarest by a rough order
// of how often bytes occur in text and code: the pass hashes the trigram
// at every offset into a table (16 KiB, one byte per hash) and ORs eight
// offsets' bits at a time, without a branch, so that its cost does not
// depend on the text. Only a set bit leads to comparing keywords: those
// whose chosen trigram is the text's there. The keywords share most of
// their bytes with ordinary text (_, -, :, / and letters), but hardly any
// of their trigrams: the pass seldom leaves its loop.

// commonness orders bytes from the most to the least common in text and
// code; a byte not listed is rarer than every listed one.
const commonness = " etaoinsrhldcumfpgwybv\nkxjqz.,\"'0123456789:;()=/-_{}ETAOINSRHLDCUMFPGWYBVKXJQZ"

// gram is the length of the byte sequence the prefilter hashes; every
// keyword is at least that long (shorter ones make their rule run over
// every string: newRuleSet).
const gram = 3

// tableBits is the size of the table, as a power of two: with about a
// hundred keywords, a text's trigram lands on a set bit by chance about
// once in 230, and eight offsets at a time once in 30.
const tableBits = 14

type anchored struct {
	kw   string
	off  int // the offset in kw of the trigram it is found by
	rule int // the rule's index in the Redactor
}

type prefilter struct {
	table [1 << tableBits]uint8 // 1 for the hash of a keyword's trigram
	// by holds the keywords by their trigram (the trigram's bytes,
	// little-endian, in a uint32).
	by    map[uint32][]anchored
	rules int
}

// trigramHash is the bit of the table for the three bytes in the low 24
// bits of t (its higher bits are ignored).
func trigramHash(t uint32) uint32 {
	return (t << 8) * 0x9E3779B1 >> (32 - tableBits)
}

func newPrefilter(rs []*rule) prefilter {
	var rank [256]int
	for i := range rank {
		rank[i] = len(commonness)
	}
	for i := 0; i < len(commonness); i++ {
		rank[commonness[i]] = i
	}
	p := prefilter{rules: len(rs), by: map[uint32][]anchored{}}
	for ri, r := range rs {
		for _, kw := range r.keywords {
			if len(kw) < gram {
				continue // its rule runs over every string (newRuleSet)
			}
			off, best := 0, -1
			for i := 0; i+gram <= len(kw); i++ {
				if score := rank[kw[i]] + rank[kw[i+1]] + rank[kw[i+2]]; score > best {
					off, best = i, score
				}
			}
			t := trigramAt(kw, off)
			h := trigramHash(t)
			p.table[h] = 1
			p.by[t] = append(p.by[t], anchored{kw: kw, off: off, rule: ri})
		}
	}
	return p
}

func trigramAt(s string, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16
}

// bit returns the table's entry (0 or 1) for the trigram in the low
// bytes of t.
func (p *prefilter) bit(t uint64) uint8 {
	return p.table[trigramHash(uint32(t))] //nolint:gosec // G115: the low bytes are the trigram
}

// scan returns, per rule, the offsets in s where its keywords start (in
// increasing order); nil when no keyword occurs.
func (p *prefilter) scan(s string) [][]int {
	var hits [][]int
	i := 0
	// Eight offsets at a time, from ten bytes (two loads).
	for ; i+16 <= len(s); i += 8 {
		b := s[i : i+16]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		x := uint64(b[8]) | uint64(b[9])<<8
		if p.bit(w)|p.bit(w>>8)|p.bit(w>>16)|p.bit(w>>24)|p.bit(w>>32)|p.bit(w>>40)|
			p.bit(w>>48|x<<16)|p.bit(w>>56|x<<8) == 0 {
			continue
		}
		for k := i; k < i+8; k++ {
			if p.table[trigramHash(trigramAt(s, k))] != 0 {
				hits = p.match(s, k, hits)
			}
		}
	}
	for ; i+gram <= len(s); i++ {
		if p.table[trigramHash(trigramAt(s, i))] != 0 {
			hits = p.match(s, i, hits)
		}
	}
	for r, h := range hits {
		if !slices.IsSorted(h) { // keywords of one rule found by trigrams at different offsets
			slices.Sort(h)
			hits[r] = slices.Compact(h)
		}
	}
	return hits
}

// match adds to hits the keywords whose trigram is s's at i and that
// occur there.
func (p *prefilter) match(s string, i int, hits [][]int) [][]int {
	t := trigramAt(s, i)
	for _, a := range p.by[t] {
		start := i - a.off
		if start < 0 || start+len(a.kw) > len(s) || s[start:start+len(a.kw)] != a.kw {
			continue
		}
		if hits == nil {
			hits = make([][]int, p.rules)
		}
		if h := hits[a.rule]; len(h) == 0 || h[len(h)-1] != start {
			hits[a.rule] = append(h, start)
		}
	}
	return hits
}
