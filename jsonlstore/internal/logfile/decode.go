package logfile

import (
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// DecodeSnapshot decodes snap, the snapshot of record r, with its pages
// expanded (or left out) and its content left as references.
func DecodeSnapshot(id session.SessionID, r *record.Rec, snap []byte) (sessnap.Snapshot, error) {
	return DecodeUnpaged(id, r, record.Whole(snap))
}

// DecodeUnpaged is DecodeSnapshot of the snapshot u stands for: its
// elements decoded where they lie (sessnap.UnmarshalElements), or, when
// u.At is negative, u.Head decoded as it is.
func DecodeUnpaged(id session.SessionID, r *record.Rec, u record.Unpaged) (sessnap.Snapshot, error) {
	var decoded sessnap.Snapshot
	var err error
	if u.At < 0 {
		decoded, err = sessnap.Unmarshal(u.Head)
	} else {
		decoded, err = sessnap.UnmarshalElements(u.Head, u.At, u.Elems)
	}
	if err != nil {
		return sessnap.Snapshot{}, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload is not a snapshot: %w", err)}
	}
	if decoded.ID != id {
		return sessnap.Snapshot{}, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload belongs to session %q", decoded.ID)}
	}
	return decoded, nil
}

// PageAt locates a failure to expand a record's pages at r: a damaged or
// missing page blob (blobAt), or a page or reference that is malformed. A
// page the store may not read (accessErr) is no damage: its error is
// returned as it is.
func PageAt(id session.SessionID, r *record.Rec, err error) error {
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) {
		return BlobAt(r, err)
	}
	if layout.AccessErr(err) {
		return err
	}
	return &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev, Err: err}
}

// BlobAt locates a blob's corruption at r, the record that references it:
// the error names the record's file, offset and revision, and the blob.
func BlobAt(r *record.Rec, err error) error {
	var ce *sessionstore.CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	return &sessionstore.CorruptionError{ID: ce.ID, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
		Err: fmt.Errorf("%s: %w", ce.Path, ce.Err)}
}
