package fulltext

// Appearances says at which revision each of a conversation's messages
// appeared: the earliest revision from which on every revision holds it.
// counts are the number of messages of revisions after, after+1, …, in
// order, the last being the latest; known is how many messages an index
// already holds (those of revision after, which counts[0] need not
// repeat). It returns the revision of each message from known to the
// latest's last, or ok false when some revision after holds fewer than
// known messages (the conversation was replaced, not continued: the index
// must start again from revision 1).
//
// Conversations only grow, so a message appears once and stays; the rule
// also gives an answer for one that shrank and grew again, where a
// message counts from the last revision that held fewer.
func Appearances(after uint64, counts []int, known int) (revs []uint64, ok bool) {
	if len(counts) == 0 {
		return nil, true
	}
	n := counts[len(counts)-1]
	if n < known {
		return nil, false
	}
	revs = make([]uint64, n-known)
	// Walk back from the latest, keeping the smallest count seen: message
	// i appeared at the revision after the last one (going back) whose
	// count is at most i.
	low := n
	for k := len(counts) - 1; k >= 0; k-- {
		c := counts[k]
		if c < known {
			return nil, false
		}
		rev := after + 1 + uint64(k)
		if c < low {
			for i := c; i < low; i++ {
				revs[i-known] = rev + 1
			}
			low = c
		}
	}
	for i := known; i < low; i++ {
		revs[i-known] = after + 1
	}
	return revs, true
}
