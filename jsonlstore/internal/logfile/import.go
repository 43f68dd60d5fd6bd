package logfile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Imported is what Import copied: the number of records and their bytes,
// the last record and the latest revision, and the largest record
// (payload or snapshot) it read.
type Imported struct {
	N       int
	Size    int64
	Last    *record.Rec
	Latest  sessionstore.Record
	Largest int
}

// Import copies session id's record lines from lines into log, verbatim,
// once each passes the checks History makes: framing, checksum and the
// sequence rules (the store's reader, internal/record), each delta
// applied to the revision before it, each payload decoded to a snapshot
// of session id. Lines are read up to layout.MaxReadRecordBytes. The
// content the records reference comes from blobs, once per content,
// checked against its reference, and is written into copied; a
// reference blobs cannot satisfy is corruption at the first record that
// holds it. Largest starts at largest (the store's cap). Nothing is
// synced; a log that ends with a gap is an error.
func Import(ctx context.Context, fsys vfs.FS, id session.SessionID, lines iter.Seq2[[]byte, error], blobs sessionstore.BlobSource, log io.Writer, copied *blobfile.Writer, largest int) (Imported, error) {
	out := Imported{Largest: largest}
	next, stop := iter.Pull2(lines)
	defer stop()
	var srcErr error // the source's own error, reported as it is
	rd := record.NewReader(id, layout.MaxReadRecordBytes, record.Seq{})
	rd.Read(record.Source{Path: layout.LogPath(id), NextLine: func() ([]byte, error) {
		line, err, ok := next()
		switch {
		case !ok:
			return nil, io.EOF
		case err != nil:
			srcErr = err
		}
		return line, err
	}})
	snaps := record.NewSnapshots(id, layout.MaxReadRecordBytes)
	im := importer{fsys: fsys, id: id, src: blobs, w: copied, seen: map[string]bool{}, pages: map[string][]byte{}}
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		r := rd.Record()
		if err := snaps.Add(r); err != nil {
			return out, err
		}
		out.Largest = max(out.Largest, len(r.Payload))
		if r.Kind != record.KindGap {
			snap := snaps.Bytes()
			out.Largest = max(out.Largest, len(snap))
			pc, err := im.copyPages(r, snap)
			if err != nil {
				return out, err
			}
			out.Latest, err = DecodeRecord(id, r, snap, pc)
			pc.Close()
			if err != nil {
				return out, err
			}
			if err := im.copyRefs(r, out.Latest.Snapshot.Messages); err != nil {
				return out, err
			}
		}
		if _, err := log.Write(r.Line()); err != nil {
			return out, layout.OpErr("import", id, fmt.Errorf("write log: %w", err))
		}
		out.N++
		out.Size += r.LineLen
		out.Last = r.Clone()
	}
	switch err := rd.Err(); {
	case srcErr != nil:
		return out, layout.OpErr("import", id, srcErr)
	case err != nil:
		return out, err
	case out.Last == nil:
		return out, layout.OpErr("import", id, errors.New("no records"))
	case out.Last.Kind == record.KindGap:
		return out, GapError(id, out.Last) // a log ends with a readable revision
	}
	out.Last.Offset = out.Size - out.Last.LineLen
	return out, nil
}

// WriteImportSummary writes into session directory dir the summary of a
// published import whose log is log and whose last record is last, of
// snapshot snap. The summary is a cache: an error fails nothing, and
// none is written when the log is not as last says.
func WriteImportSummary(dir vfs.FS, log vfs.File, last *record.Rec, snap *sessnap.Snapshot) error {
	fi, err := log.Stat()
	if err != nil || fi.Size() != last.End() {
		return nil // none is better than a wrong one
	}
	var sw SummaryWriter
	defer sw.Close()
	return sw.Write(dir, SummaryFile{Log: vfs.IdentityOf(fi), LogSize: last.End(), LogMtime: fi.ModTime().UnixNano(),
		LastOffset: last.Offset, Revision: last.Rev, Summary: ProjectRecord(last, snap, last.End())})
}

// importer copies the content an import's records reference.
type importer struct {
	fsys  vfs.FS
	id    session.SessionID
	src   sessionstore.BlobSource
	w     *blobfile.Writer
	seen  map[string]bool   // part content copied
	pages map[string][]byte // the latest record's pages, by SHA-256
}

// copyPages copies into im.w the pages snap (record r's snapshot)
// references, from im.src, checked, and returns a light cache holding
// them, for DecodeRecord: they are not in the session's directory yet.
// The pages of the record before (a chain's records share its full
// record's) are kept, so that each is read from src once.
func (im *importer) copyPages(r *record.Rec, snap []byte) (*blobfile.Cache, error) {
	c := blobfile.NewPageCache(im.fsys, im.id)
	var err error
	if perr := record.Pages(snap, func(p record.PageRef) {
		if err != nil {
			return
		}
		content, ok := im.pages[p.SHA256]
		if !ok {
			content, err = im.copy(r, session.ContentRef{SHA256: p.SHA256, Size: p.Size})
		}
		c.Hold(p.SHA256, content)
	}); perr != nil {
		return nil, PageAt(im.id, r, perr)
	}
	if err != nil {
		return nil, err
	}
	clear(im.pages)
	c.CopyTo(im.pages)
	return c, nil
}

// copyRefs copies into im.w the content of every reference in msgs (the
// snapshot of record r) not copied before, from im.src, checked.
func (im *importer) copyRefs(r *record.Rec, msgs sessnap.Messages) error {
	var err error
	msgs.Refs(func(ref session.ContentRef) {
		if err != nil || im.seen[ref.SHA256] {
			return
		}
		if _, err = im.copy(r, ref); err == nil {
			im.seen[ref.SHA256] = true
		}
	})
	return err
}

// copy writes into im.w the blob ref names (a page, or part content),
// from im.src, checked, and returns it. A reference src cannot satisfy
// is corruption at r, the record that references it.
func (im *importer) copy(r *record.Rec, ref session.ContentRef) ([]byte, error) {
	content, err := blob.Fetch(im.src, ref)
	if errors.Is(err, blob.ErrMissing) {
		return nil, &sessionstore.CorruptionError{ID: im.id, Path: r.Path, Offset: r.Offset, Revision: r.Rev, Err: fmt.Errorf("%w: blob %w", maintenance.ErrBlob, err)}
	}
	if err != nil {
		return nil, err
	}
	return content, im.w.Put(ref.SHA256, content)
}

// ImportInto is Import into the log of new session id being built in the
// temporary directory tmp: the log and the copied blobs are synced, and
// when a record is larger than the store's cap, tmp's settings.json
// records the largest (replacing the store's cap, recorded when tmp was
// made), so that every reader reads it and its next holder can go on
// from its records.
func ImportInto(ctx context.Context, root *layout.Root, id session.SessionID, tmp string, log vfs.File, lines iter.Seq2[[]byte, error], blobs sessionstore.BlobSource) (Imported, error) {
	bw := bufio.NewWriterSize(log, 1<<20)
	copied := blobfile.NewWriter(root.FS, tmp, 0)
	im, err := Import(ctx, root.FS, id, lines, blobs, bw, copied, root.MaxRecordBytes)
	if err != nil {
		return im, err
	}
	if err = bw.Flush(); err == nil {
		err = log.Datasync()
	}
	if err != nil {
		return im, layout.OpErr("import", id, fmt.Errorf("write log: %w", err))
	}
	if err = copied.Sync(); err != nil {
		return im, layout.OpErr("import", id, err)
	}
	if im.Largest > root.MaxRecordBytes {
		// Synced with the directory before publish.
		data, _ := json.Marshal(layout.Settings{MaxRecordBytes: im.Largest}) // an int: cannot fail
		if err = root.WriteSettings(tmp, data, false); err != nil {
			return im, err
		}
	}
	return im, nil
}

// WriteSummary writes the summary of session id, imported (im) and
// published, whose log is log. The summary is a cache: failing to write
// it fails nothing, and is logged.
func (im Imported) WriteSummary(root *layout.Root, id session.SessionID, log vfs.File) {
	dir, err := vfs.Sub(root.FS, layout.SessionDir(id))
	if err == nil {
		err = WriteImportSummary(dir, log, im.Last, &im.Latest.Snapshot)
		_ = dir.Close() // a directory handle, read-only
	}
	if err != nil {
		root.Logger.Warn("jsonlstore: summary not written", "session", id, "err", err)
	}
}
