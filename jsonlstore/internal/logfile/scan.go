package logfile

import (
	"errors"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// A session's history is its archived revisions (oldest, below the log's
// first) followed by the log's. historyScan reads all of it forwards with
// one record.Reader, whose sequence runs from revision 1 across the
// archive segments into the log, so every rule is checked the same way
// wherever a record is kept.
//
// Its bytes come from the store (NewScan: the manifest read and the
// segments opened by name), or from readers the caller passes
// (NewSourceScan: a backup checking the source's bytes as it copies
// them); the rules are the same either way.
type Scan struct {
	id   session.SessionID
	rd   *record.Reader
	segs []archive.Segment
	i    int    // next segment to open
	cur  func() // closes the open segment
	seg  *archive.Segment
	err  error
	tail record.Tail
	// open returns segment i's compressed bytes (close closes them); log
	// is the log's bytes, and end checks the log's end (checkEnd).
	open  func(i int) (r io.Reader, close func(), err error)
	log   record.Source
	end   func(seq record.Seq, tail record.Tail) error
	inLog bool
}

// NewScan starts a forward read of session id's whole history as v
// sees the log. Close it when done.
func NewScan(fsys vfs.FS, id session.SessionID, v *View) *Scan {
	h := &Scan{id: id, rd: record.NewReader(id, v.MaxPayload, record.Seq{}), log: v.Source(),
		end: func(seq record.Seq, tail record.Tail) error { return checkEnd(fsys, id, v, seq, tail) }}
	h.open = func(i int) (io.Reader, func(), error) {
		f, err := fsys.OpenFile(archive.Dir(id)+"/"+h.segs[i].File, layout.RDONLY, 0)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { _ = f.Close() }, nil // read-only
	}
	if first, ok := FirstRev(v); ok && first > 1 {
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

// NewSourceScan starts a forward read of session id's whole history from
// readers, with records of at most maxPayload bytes: segs are the
// archive segments below the log's first revision (as the manifest lists
// them), segment(i) the compressed bytes of segs[i] and log the log's
// bytes. The log must hold a record; no summary is consulted about its
// end (the bytes are a copy's, and a copy has none). Close it when done.
func NewSourceScan(id session.SessionID, maxPayload int, segs []archive.Segment, segment func(i int) io.Reader, log record.Source) *Scan {
	return &Scan{id: id, rd: record.NewReader(id, maxPayload, record.Seq{}), segs: segs, log: log,
		open: func(i int) (io.Reader, func(), error) { return segment(i), func() {}, nil },
		end: func(seq record.Seq, tail record.Tail) error {
			if _, ok := seq.Prev(); !ok {
				return record.ClassifyTail(id, log.Path, nil, tail, record.Evidence{}, nil)
			}
			return nil
		}}
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
			h.err = h.end(h.rd.Seq(), h.tail)
			return false
		}
		if h.i < len(h.segs) {
			h.openSegment(h.i)
			h.i++
			continue
		}
		h.inLog = true
		h.rd.Read(h.log)
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

func (h *Scan) openSegment(i int) {
	seg := &h.segs[i]
	r, closeFile, err := h.open(i)
	if err != nil {
		h.err = archive.Corruption(h.id, seg.File, seg.First, err)
		return
	}
	dec, err := archive.NewSegmentDecoder(r)
	if err != nil {
		closeFile()
		h.err = archive.Corruption(h.id, seg.File, seg.First, err)
		return
	}
	h.cur, h.seg = func() { dec.Close(); closeFile() }, seg
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
