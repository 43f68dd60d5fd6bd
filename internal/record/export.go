package record

import (
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/export"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// AppendExportLine appends the export line of a revision whose envelope is
// m and whose rebuilt snapshot is snap: the JSON Lines form that
// `sessions export` writes (export.AppendLine, whose encoding every store
// shares).
func AppendExportLine(b []byte, m Meta, snap []byte) []byte {
	return export.AppendLine(b, m.Rev, m.Gen, m.Time, m.Schema, snap)
}

// ExportSnapshot returns the snapshot an export writes for record r of
// session id, whose stored snapshot is payload and which decodes (its
// pages expanded, its content left as references) to snap: payload
// itself, byte for byte (a newer schema's unknown keys included), or, when
// payload has pages or snap's parts keep content out of line, snap with
// that content read back in by resolve, encoded again, so that an export
// stands on its own and a session exports to the same bytes from every
// store. A snapshot that does not encode again is a
// *sessionstore.CorruptionError at r; resolve's errors are returned as
// they are.
func ExportSnapshot(id session.SessionID, r *Rec, payload []byte, snap *sessnap.Snapshot, resolve func() error) ([]byte, error) {
	refs := 0
	snap.Messages.Refs(func(session.ContentRef) { refs++ })
	if refs == 0 && !MayHavePages(payload) {
		return payload, nil
	}
	if err := resolve(); err != nil {
		return nil, err
	}
	out, err := sessnap.Marshal(*snap)
	if err != nil {
		return nil, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev, Err: err}
	}
	return out, nil
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
