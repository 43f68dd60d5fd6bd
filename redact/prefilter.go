package redact

// The prefilter finds where the rules' keywords occur in one pass over a
// string, so that a regular expression runs only near a keyword, and not
// at all over the many strings that hold none. Each keyword is found by
// its anchor: its rarest byte (by a rough order of how often bytes occur
// in text and code). The pass looks each byte up in a table; only an
// anchor byte leads to comparing the keywords that have it there.

// commonness orders bytes from the most to the least common in text and
// code; a byte not listed is rarer than every listed one.
const commonness = " etaoinsrhldcumfpgwybv\nkxjqz.,\"'0123456789:;()=/-_{}ETAOINSRHLDCUMFPGWYBVKXJQZ"

type anchored struct {
	kw   string
	off  int // the anchor's offset in kw
	rule int // the rule's index in the Redactor
}

type prefilter struct {
	slot  [256]uint16  // 1 + the index of the byte's group in by; 0: not an anchor
	by    [][]anchored // keywords by anchor byte
	rules int
}

func newPrefilter(rs []*rule) prefilter {
	var rank [256]int
	for i := range rank {
		rank[i] = len(commonness)
	}
	for i := 0; i < len(commonness); i++ {
		rank[commonness[i]] = i
	}
	p := prefilter{rules: len(rs)}
	for ri, r := range rs {
		for _, kw := range r.keywords {
			off := 0
			for i := 1; i < len(kw); i++ {
				if rank[kw[i]] > rank[kw[off]] {
					off = i
				}
			}
			c := kw[off]
			if p.slot[c] == 0 {
				p.by = append(p.by, nil)
				p.slot[c] = uint16(len(p.by)) //nolint:gosec // G115: at most 256 groups, one per byte value
			}
			g := int(p.slot[c]) - 1
			p.by[g] = append(p.by[g], anchored{kw: kw, off: off, rule: ri})
		}
	}
	return p
}

// scan returns, per rule, the offsets in s where its keywords start (in
// increasing order); nil when no keyword occurs.
func (p *prefilter) scan(s string) [][]int {
	var hits [][]int
	for i := 0; i < len(s); i++ {
		// Eight bytes at a time while none is an anchor: most of a text.
		for i+8 <= len(s) && p.slot[s[i]]|p.slot[s[i+1]]|p.slot[s[i+2]]|p.slot[s[i+3]]|
			p.slot[s[i+4]]|p.slot[s[i+5]]|p.slot[s[i+6]]|p.slot[s[i+7]] == 0 {
			i += 8
		}
		if i >= len(s) {
			break
		}
		g := p.slot[s[i]]
		if g == 0 {
			continue
		}
		for _, a := range p.by[g-1] {
			start := i - a.off
			// The first and last bytes first: most anchors are not a
			// keyword's, and these two tell at once.
			if start < 0 || start+len(a.kw) > len(s) || s[start] != a.kw[0] || s[start+len(a.kw)-1] != a.kw[len(a.kw)-1] ||
				s[start:start+len(a.kw)] != a.kw {
				continue
			}
			if hits == nil {
				hits = make([][]int, p.rules)
			}
			if h := hits[a.rule]; len(h) == 0 || h[len(h)-1] != start {
				hits[a.rule] = append(h, start)
			}
		}
	}
	return hits
}
