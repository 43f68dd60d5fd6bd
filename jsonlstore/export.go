package jsonlstore

import (
	"context"
	"io"

	"github.com/sessionstore/sessionstore/internal/export"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// Export writes session id to w.
//
// By default it writes every revision, oldest first, as JSON Lines: one
// compact object per revision, keys in this order,
//
//	{"revision":1,"generation":1,"time":"2026-11-29T12:00:01Z","schema":1,"snapshot":{…}}
//
// where snapshot is the sessnap snapshot byte for byte as the writer encoded
// it (see sessionstore.ExportLine): a full record's payload, or what a delta
// record rebuilds. Records are checked as History checks them and every
// payload must decode; at the first corrupt record Export stops and returns a
// *sessionstore.CorruptionError, after writing the revisions before it. An
// uncommitted tail is not part of the history and is not written.
//
// With latestOnly it writes only the latest revision's snapshot, indented
// JSON followed by a newline — the document `jq` users want, without the
// envelope.
//
// Export takes no lease and modifies nothing. Errors: those of Load and
// History, and w's.
func (s *Store) Export(ctx context.Context, id session.SessionID, w io.Writer, latestOnly bool) error {
	if latestOnly {
		return s.exportLatest(ctx, id, w)
	}
	var yielded uint64 // lines already written survive a retry of the read
	var buf []byte
	return s.read(ctx, id, func(v *logfile.View) error {
		// Every snapshot is rebuilt, also those already written (a retry
		// reads from the start); ctx interrupts it (an export of every
		// revision can be long).
		h := logfile.NewRebuild(ctx, s.fs, id, v)
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

func (s *Store) exportLatest(ctx context.Context, id session.SessionID, w io.Writer) error {
	var out []byte
	err := s.read(ctx, id, func(v *logfile.View) error {
		last, snap, err := logfile.LatestSnapshot(s.fs, id, v)
		if err != nil {
			return err
		}
		c := blobfile.NewCache(s.fs, id)
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
	rec, err := logfile.DecodeRecord(id, r, snap, c.WithoutContent())
	if err != nil {
		return nil, err
	}
	return record.ExportSnapshot(id, r, snap, &rec.Snapshot, func() error {
		if err := rec.Snapshot.Messages.Resolve(c.Fetch); err != nil {
			return logfile.BlobAt(r, err)
		}
		return nil
	})
}
