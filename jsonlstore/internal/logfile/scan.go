package logfile

import (
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/session"
)

// A session's history is its archived revisions (oldest, below the log's
// first) followed by the log's. historyScan reads all of it forwards with
// one record.Reader, whose sequence runs from revision 1 across the
// archive segments into the log, so every rule is checked the same way
// wherever a record is kept.
type Scan struct {
	fs   vfs.FS
	id   session.SessionID
	v    *View
	rd   *record.Reader
	segs []archive.Segment
	i    int    // next segment to open
	cur  func() // closes the open segment
	seg  *archive.Segment
	err  error
	tail record.Tail
	// logFirst is the log's first revision (1 without archives).
	logFirst uint64
	inLog    bool
}

// NewScan starts a forward read of session id's whole history as v
// sees the log. Close it when done.
func NewScan(fsys vfs.FS, id session.SessionID, v *View) *Scan {
	h := &Scan{fs: fsys, id: id, v: v, rd: record.NewReader(id, v.MaxPayload, record.Seq{}), logFirst: 1}
	if first, ok := FirstRev(v); ok && first > 1 {
		h.logFirst = first
		m, err := archive.ReadManifest(fsys, id)
		if err != nil {
			h.err = archive.Corruption(id, archive.ManifestFile, 0, err)
			return h
		}
		if h.segs, err = m.Below(first); err != nil {
			h.err = archive.Corruption(id, archive.ManifestFile, 0, err)
		}
	}
	return h
}

// Next advances to the next record of the history.
func (h *Scan) Next() bool {
	for h.err == nil {
		if h.rd.Next() {
			return true
		}
		if err := h.rd.Err(); err != nil {
			h.err = h.segmentErr(err)
			return false
		}
		switch {
		case h.seg != nil:
			// The segment ended: it must hold exactly its range.
			if p, _ := h.rd.Seq().Prev(); p.Through() != h.seg.Last {
				h.err = archive.Corruption(h.id, h.seg.File, p.Through()+1, fmt.Errorf("segment ends at revision %d, manifest says %d", p.Through(), h.seg.Last))
				return false
			}
			h.closeSegment()
		case h.inLog:
			h.tail = h.rd.Tail()
			h.err = checkEnd(h.fs, h.id, h.v, h.rd.Seq(), h.tail)
			return false
		}
		if h.i < len(h.segs) {
			h.openSegment(&h.segs[h.i])
			h.i++
			continue
		}
		h.inLog = true
		h.rd.Read(h.v.Source())
	}
	return false
}

// Record returns the current record (its payload valid until Next).
func (h *Scan) Record() *record.Rec { return h.rd.Record() }

// Archived reports whether the current record is an archived one.
func (h *Scan) Archived() bool { return !h.inLog }

// Err returns what stopped the scan: nil at the log's end.
func (h *Scan) Err() error { return h.err }

// Tail returns the bytes after the log's last valid record.
func (h *Scan) Tail() record.Tail { return h.tail }

// Close closes the open segment, if any.
func (h *Scan) Close() { h.closeSegment() }

func (h *Scan) closeSegment() {
	if h.cur != nil {
		h.cur()
		h.cur, h.seg = nil, nil
	}
}

func (h *Scan) openSegment(seg *archive.Segment) {
	dec, closeSeg, err := archive.OpenSegment(h.fs, archive.Dir(h.id)+"/"+seg.File)
	if err != nil {
		h.err = archive.Corruption(h.id, seg.File, seg.First, err)
		return
	}
	h.cur, h.seg = closeSeg, seg
	h.rd.Read(record.Source{R: archive.NewSegmentReader(dec, seg), Size: -1,
		Path: archive.Dir(h.id) + "/" + seg.File})
}

// segmentErr locates an error met while reading a segment.
func (h *Scan) segmentErr(err error) error {
	var ce *sessionstore.CorruptionError
	var ne *sessionstore.NewerRecordError
	if h.seg == nil || errors.As(err, &ce) || errors.As(err, &ne) {
		return err
	}
	return archive.Corruption(h.id, h.seg.File, 0, err)
}

// checkEnd checks the end of a log read forwards, whose last record seq
// holds and tail is what follows it: a log must hold a record, and
// nothing that proves more revisions committed than it holds.
func checkEnd(fsys vfs.FS, id session.SessionID, v *View, seq record.Seq, tail record.Tail) error {
	p, ok := seq.Prev()
	if !ok {
		return record.ClassifyTail(id, v.Name, nil, tail, record.Evidence{}, nil)
	}
	if ev := Evidence(fsys, id, v); ev.Revision > p.Through() {
		return record.ClassifyTail(id, v.Name, &record.Rec{Meta: p}, tail, ev, nil)
	}
	return nil
}

// FirstRev reads the revision of the view's first record.
func FirstRev(v *View) (uint64, bool) {
	var buf [64]byte
	n, _ := v.F.ReadAt(buf[:min(int64(len(buf)), v.Size)], 0)
	rev, ok := record.PeekRev(buf[:n])
	return rev, ok && rev > 0
}
