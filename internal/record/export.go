package record

import (
	"fmt"

	"github.com/sessionstore/sessionstore"
)

// AppendExportLine appends the export line of a revision whose envelope is
// m and whose rebuilt snapshot is snap: the JSON Lines form that
// `sessions export` writes (sessionstore.AppendExportLine, whose encoding
// every store shares).
func AppendExportLine(b []byte, m Meta, snap []byte) []byte {
	return sessionstore.AppendExportLine(b, m.Rev, m.Gen, m.Time, m.Schema, snap)
}

// ExportLen is the length of record m's export line (AppendExportLine),
// found without rebuilding the snapshot: a full record's payload is its
// snapshot, a delta names its snapshot's length. A gap has none (0).
// Content kept out of line (pages, blobs) is not counted: an export that
// reads it back in is longer.
func ExportLen(m Meta, payload []byte) (int, error) {
	var n int
	switch m.Kind {
	case KindGap:
		return 0, nil
	case KindFull:
		n = len(payload)
	case KindDelta:
		ops, err := parseDelta(payload)
		if err != nil {
			return 0, err
		}
		n = ops.snapLen
	default:
		return 0, fmt.Errorf("record kind %q", m.Kind)
	}
	return len(AppendExportLine(nil, m, nil)) + n, nil
}
