package jsonlstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// RecordInfo describes one record of a session's log as stored, without
// its payload: what `sessions log` prints.
type RecordInfo = sessionstore.RecordInfo

// Records yields the metadata of every record of session id in order,
// archived revisions first, as History yields records, and with the same
// checks (framing, checksum, sequence; a damaged record followed by valid
// ones ends the sequence with a *sessionstore.CorruptionError, yielded
// once, last), but without decoding payloads: its cost is reading the log
// (and archives), not decoding every snapshot. Like every read it takes no
// lease and modifies nothing.
func (s *Store) Records(ctx context.Context, id session.SessionID) iter.Seq2[RecordInfo, error] {
	return func(yield func(RecordInfo, error) bool) {
		var yielded uint64 // records already yielded survive a retry of the read
		stopped := false
		err := s.read(ctx, id, func(v *view) error {
			at := s.placesOf(id, v)
			return s.scanRecords(ctx, id, v, func(r *rawRecord) (bool, error) {
				if r.Rev <= yielded {
					return true, nil
				}
				yielded = r.Rev
				if !yield(at.info(r), nil) {
					stopped = true
					return false, nil
				}
				return true, nil
			})
		})
		if err != nil && !stopped {
			yield(RecordInfo{}, err)
		}
	}
}

// RecordLines yields every record line of session id in order, archived
// revisions first, each with its newline, exactly as stored (a copy the
// caller may keep), with the checks of Records. It is how a session is
// copied verbatim into another store of the same record format.
func (s *Store) RecordLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		var yielded uint64 // records already yielded survive a retry of the read
		stopped := false
		err := s.read(ctx, id, func(v *view) error {
			return s.scanRecords(ctx, id, v, func(r *rawRecord) (bool, error) {
				if r.Rev <= yielded {
					return true, nil
				}
				yielded = r.Rev
				// The format has one layout per record (the parser is
				// positional and strict), so encoding the parsed envelope
				// and payload again gives the stored bytes.
				if !yield(encodeRecord(r.meta, r.Payload), nil) {
					stopped = true
					return false, nil
				}
				return true, nil
			})
		})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// places says where scanRecords found a record of one view: in the log,
// or, for a revision below the log's first, in an archive segment.
type places struct {
	id       session.SessionID
	log      string
	logFirst uint64
	segs     []archiveSegment
}

// placesOf reads what places needs: the log's first revision and, when
// revisions are archived, the manifest's segments below it. It is for
// naming files only: the scan itself checks the archives.
func (s *Store) placesOf(id session.SessionID, v *view) places {
	p := places{id: id, log: v.name, logFirst: 1}
	if first, err := firstRevOf(v); err == nil {
		p.logFirst = first
	}
	if p.logFirst > 1 {
		if m, err := readManifest(s.fs, id); err == nil {
			p.segs, _ = m.archivedBelow(p.logFirst)
		}
	}
	return p
}

// file returns the file holding revision rev, and whether it is archived.
func (p places) file(rev uint64) (string, bool) {
	if rev >= p.logFirst {
		return p.log, false
	}
	for _, seg := range p.segs {
		if rev >= seg.First && rev <= seg.Last {
			return archiveDir(p.id) + "/" + seg.File, true
		}
	}
	return archiveDir(p.id), true
}

func (p places) info(r *rawRecord) RecordInfo {
	file, archived := p.file(r.Rev)
	return RecordInfo{
		Revision: r.Rev, Generation: r.Gen, Time: r.Time, Schema: r.Schema, Kind: r.Kind,
		File: file, Offset: r.Offset, Archived: archived, Bytes: r.LineLen, PayloadBytes: len(r.Payload),
	}
}
