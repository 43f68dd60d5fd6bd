package redact

// The prefilter finds where the rules' keywords occur in one pass over a
// string, so that a regular expression runs only near a keyword, and not
// at all over the many strings that hold none. Each keyword is found by
// its anchor: its rarest byte (by a rough order of how often bytes occur
// in text and code). The pass looks each byte up in a table; only an
// anchor byte leads to comparing keywords, and only those whose byte
// beside the anchor (the one before it, or after it for a keyword that
// starts with its anchor) is the text's there: text and code are full of
// anchor bytes (_, -, :, /, .), and most are next to a byte no keyword
// has beside them.

// commonness orders bytes from the most to the least common in text and
// code; a byte not listed is rarer than every listed one.
const commonness = " etaoinsrhldcumfpgwybv\nkxjqz.,\"'0123456789:;()=/-_{}ETAOINSRHLDCUMFPGWYBVKXJQZ"

type anchored struct {
	kw   string
	off  int // the anchor's offset in kw
	rule int // the rule's index in the Redactor
}

type prefilter struct {
	slot  [256]uint16 // 1 + the index of the byte's group in by; 0: not an anchor
	by    []*group    // keywords by anchor byte
	rules int
}

// group holds the keywords of one anchor byte, by the byte beside it:
// before holds, by the byte before the anchor, those whose anchor is not
// their first byte; after, by the byte after it, those that start with
// it.
type group struct {
	before, after [256][]anchored
	alone         []anchored // keywords of one byte
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
				p.by = append(p.by, &group{})
				p.slot[c] = uint16(len(p.by)) //nolint:gosec // G115: at most 256 groups, one per byte value
			}
			g := p.by[int(p.slot[c])-1]
			a := anchored{kw: kw, off: off, rule: ri}
			switch {
			case off > 0:
				g.before[kw[off-1]] = append(g.before[kw[off-1]], a)
			case len(kw) > 1:
				g.after[kw[1]] = append(g.after[kw[1]], a)
			default:
				g.alone = append(g.alone, a)
			}
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
		grp := p.by[g-1]
		hits = p.match(s, i, grp.alone, hits)
		if i > 0 {
			hits = p.match(s, i, grp.before[s[i-1]], hits)
		}
		if i+1 < len(s) {
			hits = p.match(s, i, grp.after[s[i+1]], hits)
		}
	}
	return hits
}

// match adds to hits the keywords of cands (anchored at s[i]) that occur
// there.
func (p *prefilter) match(s string, i int, cands []anchored, hits [][]int) [][]int {
	for _, a := range cands {
		start := i - a.off
		// The first and last bytes first: they tell most misses at once.
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
	return hits
}
