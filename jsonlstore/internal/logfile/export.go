package logfile

import (
	"context"
	"io"

	"github.com/sessionstore/sessionstore/internal/export"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Export writes session id to w (jsonlstore.Store.Export says what):
// every revision, oldest first, one export line each, as History reads
// them; with latestOnly the latest revision's snapshot, indented. A
// retried read writes no line twice.
func Export(ctx context.Context, root *layout.Root, id session.SessionID, w io.Writer, latestOnly bool) error {
	if latestOnly {
		return exportLatest(ctx, root, id, w)
	}
	var yielded uint64 // lines already written survive a retry of the read
	var buf []byte
	return Read(ctx, root, id, func(v *View) error {
		// Every snapshot is rebuilt, also those already written (a retry
		// reads from the start); ctx interrupts it (an export of every
		// revision can be long).
		h := NewRebuild(ctx, root.FS, id, v)
		defer h.Close()
		for h.Next() {
			r := h.Record()
			if r.Through() <= yielded || r.Kind == record.KindGap {
				continue // a gap's revisions have no snapshot to export
			}
			snap, err := exportSnapshot(id, r, h.Snapshot(), h.Blobs())
			if err != nil {
				return err
			}
			buf = record.AppendExportLine(buf[:0], r.Meta, snap)
			if _, err := w.Write(buf); err != nil {
				return layout.OpErr("export", id, err)
			}
			yielded = r.Through()
		}
		return h.Err()
	})
}

// exportLatest writes the latest revision's snapshot of session id to w,
// indented (Export with latestOnly).
func exportLatest(ctx context.Context, root *layout.Root, id session.SessionID, w io.Writer) error {
	var out []byte
	err := Read(ctx, root, id, func(v *View) error {
		last, snap, err := LatestSnapshot(root.FS, id, v)
		if err != nil {
			return err
		}
		c := blobfile.NewCache(root.FS, id)
		defer c.Close()
		if snap, err = exportSnapshot(id, last, snap, c); err != nil {
			return err
		}
		if out, err = export.Indent(snap); err != nil {
			return layout.OpErr("export", id, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := w.Write(out); err != nil {
		return layout.OpErr("export", id, err)
	}
	return nil
}

// exportSnapshot checks that snap, the snapshot of record r, decodes, and
// returns the snapshot to export (record.ExportSnapshot), its content read
// from c.
func exportSnapshot(id session.SessionID, r *record.Rec, snap []byte, c *blobfile.Cache) ([]byte, error) {
	rec, err := DecodeRecord(id, r, snap, c.WithoutContent())
	if err != nil {
		return nil, err
	}
	return record.ExportSnapshot(id, r, snap, &rec.Snapshot, func() error {
		if err := rec.Snapshot.Messages.Resolve(c.Fetch); err != nil {
			return BlobAt(r, err)
		}
		return nil
	})
}
