package fulltext

// Count is what a revision holds of its conversation: N messages, the
// first Kept of which are the previous revision's, unchanged.
type Count struct {
	N, Kept int
}

// Appearances says at which revision each of a conversation's messages
// appeared: the earliest revision from which on every revision holds it
// unchanged. counts are those of revisions after+1, after+2, …, in
// order, the last being the latest; known is how many messages an index
// holds already, those of revision after. It returns the revision of
// each message from known to the latest's last, or ok false when a
// revision after keeps fewer than known of them (the conversation was
// replaced, not continued: the index must start again from revision 1,
// with after 0 and known 0).
//
// Conversations only grow, so a message appears once and stays; the rule
// also answers for one that was cut and grew again, where a message
// counts from the last revision that did not hold it.
func Appearances(after uint64, counts []Count, known int) (revs []uint64, ok bool) {
	if len(counts) == 0 {
		return nil, true
	}
	n := counts[len(counts)-1].N
	if n < known {
		return nil, false
	}
	revs = make([]uint64, n-known)
	// Walk back from the latest, keeping low: the messages below it stood
	// unchanged in every revision walked. Messages from a revision's Kept
	// (or its count) up to low appeared at it.
	low := n
	for k := len(counts) - 1; k >= 0; k-- {
		c := counts[k]
		rev := after + 1 + uint64(k)
		if c.N < low {
			low = c.N // the revisions after it hold more: set below
		}
		kept := min(c.Kept, low)
		if kept < known {
			return nil, false
		}
		for i := kept; i < low; i++ {
			revs[i-known] = rev
		}
		low = kept
	}
	return revs, true
}
