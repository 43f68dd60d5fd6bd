package record

import (
	"encoding/json"
	"fmt"
)

// A gap record (format 3) stands for revisions that a repair set aside:
// their records were damaged, or were deltas that could not be rebuilt
// without a damaged record. Its revision is the first missing one; its
// payload names the last and where the removed bytes went:
//
//	{"v":3,"schema":1,"rev":15,"gen":4,"time":"…","kind":"gap","len":96,
//	 "gap":{"last":17,"reason":"…","forensic":"ID/forensic/repair-….bin"},"crc":"…"}
//
// Its generation and time are those of the record before it (or of the
// record after it, for a gap at revision 1), so the sequence rules hold
// across it. The record after a gap is revision last+1, a full record.

// Gap is a gap record's payload.
type Gap struct {
	// Last is the last missing revision (at least the record's own).
	Last uint64 `json:"last"`
	// Reason says why the revisions are missing.
	Reason string `json:"reason"`
	// Forensic is the file, relative to the store root, that holds the
	// removed bytes, when there is one.
	Forensic string `json:"forensic,omitempty"`
}

// maxGapPayload bounds a gap payload a reader decodes.
const maxGapPayload = 4 << 10

// ParseGap decodes a gap record's payload.
func ParseGap(payload []byte) (Gap, error) {
	var g Gap
	if len(payload) > maxGapPayload {
		return g, fmt.Errorf("%w: gap payload of %d bytes", ErrFraming, len(payload))
	}
	if err := json.Unmarshal(payload, &g); err != nil || g.Last == 0 {
		return g, fmt.Errorf("%w: gap payload %.60q", ErrFraming, payload)
	}
	return g, nil
}

// EncodeGap returns the payload of a gap record.
func EncodeGap(g Gap) []byte {
	b, _ := json.Marshal(g) // a struct of a number and strings: cannot fail
	return b
}
