package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/session"
)

// A session's history is its archived revisions (oldest, below the log's
// first) followed by the log's. historyScan reads all of it forwards with
// one record.Reader, whose sequence runs from revision 1 across the
// archive segments into the log, so every rule is checked the same way
// wherever a record is kept.
type historyScan struct {
	s    *Store
	id   session.SessionID
	v    *view
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

// scanHistory starts a forward read of session id's whole history as v
// sees the log. Close it when done.
func (s *Store) scanHistory(id session.SessionID, v *view) *historyScan {
	h := &historyScan{s: s, id: id, v: v, rd: record.NewReader(id, v.maxPayload, record.Seq{}), logFirst: 1}
	if first, ok := firstRevOf(v); ok && first > 1 {
		h.logFirst = first
		m, err := archive.ReadManifest(s.fs, id)
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
func (h *historyScan) Next() bool {
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
			h.err = h.s.checkEnd(h.id, h.v, h.rd.Seq(), h.tail)
			return false
		}
		if h.i < len(h.segs) {
			h.openSegment(&h.segs[h.i])
			h.i++
			continue
		}
		h.inLog = true
		h.rd.Read(h.v.source())
	}
	return false
}

// Record returns the current record (its payload valid until Next).
func (h *historyScan) Record() *record.Rec { return h.rd.Record() }

// Archived reports whether the current record is an archived one.
func (h *historyScan) Archived() bool { return !h.inLog }

// Err returns what stopped the scan: nil at the log's end.
func (h *historyScan) Err() error { return h.err }

// Tail returns the bytes after the log's last valid record.
func (h *historyScan) Tail() record.Tail { return h.tail }

// Close closes the open segment, if any.
func (h *historyScan) Close() { h.closeSegment() }

func (h *historyScan) closeSegment() {
	if h.cur != nil {
		h.cur()
		h.cur, h.seg = nil, nil
	}
}

func (h *historyScan) openSegment(seg *archive.Segment) {
	dec, closeSeg, err := archive.OpenSegment(h.s.fs, archive.Dir(h.id)+"/"+seg.File)
	if err != nil {
		h.err = archive.Corruption(h.id, seg.File, seg.First, err)
		return
	}
	h.cur, h.seg = closeSeg, seg
	h.rd.Read(record.Source{R: &segmentReader{r: dec, seg: seg, h: crc32.New(record.Castagnoli)}, Size: -1,
		Path: archive.Dir(h.id) + "/" + seg.File})
}

// historyRebuild reads session id's whole history forwards (historyScan)
// and rebuilds every revision's snapshot on the way: a delta needs its
// base, so every record is applied, also those a caller passes over. It
// stops when ctx is done. Close it when done.
type historyRebuild struct {
	*historyScan
	ctx   context.Context
	snaps *record.Snapshots
	blobs *blobCache // the session's content kept out of line, read once
	err   error
}

// rebuildHistory starts a historyRebuild of session id as v sees the log.
func (s *Store) rebuildHistory(ctx context.Context, id session.SessionID, v *view) *historyRebuild {
	return &historyRebuild{historyScan: s.scanHistory(id, v), ctx: ctx,
		snaps: record.NewSnapshots(id, v.maxPayload), blobs: s.newBlobCache(id)}
}

// Next advances to the next record and applies it to the snapshot.
func (h *historyRebuild) Next() bool {
	if h.err != nil || !h.historyScan.Next() {
		return false
	}
	if h.err = h.ctx.Err(); h.err != nil {
		return false
	}
	h.err = h.snaps.Add(h.Record())
	return h.err == nil
}

// Snapshot returns the bytes of the current record's revision's snapshot
// (valid until Next).
func (h *historyRebuild) Snapshot() []byte { return h.snaps.Bytes() }

// Err returns what stopped the read: nil at the log's end.
func (h *historyRebuild) Err() error {
	if h.err != nil {
		return h.err
	}
	return h.historyScan.Err()
}

// Close closes the open segment and the content cache.
func (h *historyRebuild) Close() {
	h.blobs.Close()
	h.historyScan.Close()
}

// segmentErr locates an error met while reading a segment.
func (h *historyScan) segmentErr(err error) error {
	var ce *sessionstore.CorruptionError
	var ne *sessionstore.NewerRecordError
	if h.seg == nil || errors.As(err, &ce) || errors.As(err, &ne) {
		return err
	}
	return archive.Corruption(h.id, h.seg.File, 0, err)
}

// segmentReader reads a segment's decompressed bytes, never more than the
// manifest promises (an archive bomb stops there), and checks their size
// and checksum against the manifest when they end.
type segmentReader struct {
	r   io.Reader
	seg *archive.Segment
	h   interface {
		io.Writer
		Sum32() uint32
	}
	n int64
}

func (s *segmentReader) Read(p []byte) (int, error) {
	if rest := s.seg.Bytes + 1 - s.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	_, _ = s.h.Write(p[:n]) // a hash never fails
	if s.n > s.seg.Bytes {
		return n, fmt.Errorf("segment %s holds more than the %d bytes the manifest says", s.seg.File, s.seg.Bytes)
	}
	if errors.Is(err, io.EOF) {
		if s.n != s.seg.Bytes {
			return n, fmt.Errorf("segment %s holds %d bytes, manifest says %d", s.seg.File, s.n, s.seg.Bytes)
		}
		if got := fmt.Sprintf("%08x", s.h.Sum32()); got != s.seg.CRC {
			return n, fmt.Errorf("segment %s checksum %s, manifest says %s", s.seg.File, got, s.seg.CRC)
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return n, fmt.Errorf("segment %s ends early: truncated or damaged", s.seg.File)
	}
	return n, err
}

// checkEnd checks the end of a log read forwards, whose last record seq
// holds and tail is what follows it: a log must hold a record, and
// nothing that proves more revisions committed than it holds.
func (s *Store) checkEnd(id session.SessionID, v *view, seq record.Seq, tail record.Tail) error {
	p, ok := seq.Prev()
	if !ok {
		return record.ClassifyTail(id, v.name, nil, tail, record.Evidence{}, nil)
	}
	if ev := s.evidence(id, v); ev.Revision > p.Through() {
		return record.ClassifyTail(id, v.name, &record.Rec{Meta: p}, tail, ev, nil)
	}
	return nil
}

// firstRevOf reads the revision of the view's first record.
func firstRevOf(v *view) (uint64, bool) {
	var buf [64]byte
	n, _ := v.f.ReadAt(buf[:min(int64(len(buf)), v.size)], 0)
	rev, ok := record.PeekRev(buf[:n])
	return rev, ok && rev > 0
}

// History yields every revision in order, archived ones first. It stops
// at the first corruption, yielding a *sessionstore.CorruptionError with
// its file and offset, and before a newer program's record (a
// *sessionstore.NewerRecordError); an uncommitted tail is not part of the
// history. Revisions a repair set aside are yielded as one
// *sessionstore.GapError in their place, and the history goes on after
// them.
func (s *Store) History(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	return func(yield func(sessionstore.Record, error) bool) {
		var yielded uint64 // revisions already yielded survive a retry
		stopped := false
		err := s.read(ctx, id, func(v *view) error {
			h := s.rebuildHistory(ctx, id, v)
			defer h.Close()
			for h.Next() {
				r := h.Record()
				if r.Through() <= yielded {
					continue
				}
				var ok bool
				if r.Kind == record.KindGap {
					yielded = r.Through()
					ok = yield(sessionstore.Record{}, gapError(id, r))
				} else {
					rec, err := decodeRecord(id, r, h.Snapshot(), h.blobs)
					if err != nil {
						return err // (not yielded: a retry meets it again)
					}
					yielded = r.Through()
					ok = yield(rec, nil)
				}
				if !ok {
					stopped = true
					return nil
				}
			}
			return h.Err()
		})
		if err != nil && !stopped {
			yield(sessionstore.Record{}, err)
		}
	}
}
