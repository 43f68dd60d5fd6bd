package repair

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Compaction by releases before the one that wrote this file took a
// segment's last revision to be its first plus its record count less one.
// A segment that ends with a gap record (salvage.go) holds more revisions
// than records, so its manifest entry, and its file's name, end too early:
// a gap of revisions 9-16 archived with revisions 1-8 was listed as 1-9,
// and the archives then seem to end before the log begins. Nothing was
// lost — the segment holds every line — but no reader can reach it.
//
// Repair corrects such an entry when the segment itself proves the right
// end: read whole, its bytes match the manifest's size and checksum, it
// holds the manifest's number of records from the manifest's first
// revision on, they follow the sequence rules (a gap among them), and its
// last record ends just before what follows the segment (the next
// segment, or the log). Nothing else is ever changed
// here: an archive that does not prove its end is left to Verify to
// report.

// fixArchiveGaps corrects, under the lease, the manifest entries of
// segments that an older compaction ended too early (above), and returns
// what it corrected. Order makes every crash safe: the segment's bytes
// are copied under the new name (synced, renamed, the directory synced) —
// an unlisted file that compaction would reclaim — then the manifest is
// replaced atomically and durably, and only then is the old file removed.
func (s *Store) fixArchiveGaps(id session.SessionID) ([]maintenance.ArchiveFix, error) {
	v, err := logfile.Open(s.root.FS, id, s.root.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	logFirst, ok := logfile.FirstRev(v)
	maxPayload := v.MaxPayload
	_ = v.Close() // read-only
	if !ok || logFirst <= 1 {
		return nil, nil
	}
	m, err := archive.ReadManifest(s.root.FS, id)
	if err != nil {
		return nil, nil //nolint:nilerr // damage that Verify reports: nothing here proves a fix, and repair goes on to report it
	}
	if _, err := m.Below(logFirst); err == nil {
		return nil, nil
	}
	// The segments below the log in order, each followed by the first
	// revision of what comes after it.
	var below []int
	for i, seg := range m.Segments {
		if seg.Last < logFirst {
			below = append(below, i)
		}
	}
	var fixes []maintenance.ArchiveFix
	next := uint64(1)
	for k, i := range below {
		seg := m.Segments[i]
		if seg.First != next {
			return nil, nil // a hole no segment proves the end of
		}
		after := logFirst
		if k+1 < len(below) {
			after = m.Segments[below[k+1]].First
		}
		next = seg.Last + 1
		if after <= next {
			continue
		}
		last, err := s.segmentEnd(id, seg, maxPayload)
		if err != nil || last != after-1 {
			return nil, nil //nolint:nilerr // a segment that does not prove its end is left as it is, for Verify to report
		}
		fixes = append(fixes, maintenance.ArchiveFix{Old: seg.File, New: archive.SegmentName(seg.First, last), First: seg.First, Last: last, Listed: seg.Last})
		next = after
	}
	if len(fixes) == 0 {
		return nil, nil
	}
	for _, f := range fixes {
		if err := s.copySegment(id, f.Old, f.New); err != nil {
			return nil, fmt.Errorf("copy archive segment %s to %s: %w", f.Old, f.New, err)
		}
	}
	for i := range m.Segments {
		for _, f := range fixes {
			if m.Segments[i].File == f.Old {
				m.Segments[i].Last, m.Segments[i].File = f.Last, f.New
			}
		}
	}
	if err := archive.WriteManifest(s.root.FS, id, m); err != nil {
		return nil, fmt.Errorf("write archive manifest: %w", err)
	}
	for _, f := range fixes {
		// Unlisted now: a file left by a crash here is a leftover that the
		// next compaction reclaims.
		_ = s.root.FS.Remove(archive.Dir(id) + "/" + f.Old)
	}
	if err := s.root.FS.SyncDir(archive.Dir(id)); err != nil {
		return nil, err
	}
	s.root.Logger.Info("jsonlstore: repair corrected archive segments that ended in a gap", "session", id, "fixes", fixes)
	return fixes, nil
}

// segmentEnd reads segment seg whole and returns the last revision it
// holds, checking its bytes against the manifest (segmentReader), its
// first revision and record count, and the sequence rules among its
// records.
func (s *Store) segmentEnd(id session.SessionID, seg archive.Segment, maxPayload int) (uint64, error) {
	dec, closeSeg, err := archive.OpenSegment(s.root.FS, archive.Dir(id)+"/"+seg.File)
	if err != nil {
		return 0, err
	}
	defer closeSeg()
	seq := record.Seq{}
	if seg.First > 1 {
		seq = record.Resumed()
	}
	rd := record.NewReader(id, maxPayload, seq)
	rd.Read(record.Source{R: archive.NewSegmentReader(dec, &seg), Size: -1,
		Path: archive.Dir(id) + "/" + seg.File})
	var n int64
	var first, last record.Meta
	for rd.Next() {
		if n == 0 {
			first = rd.Record().Meta
		}
		last = rd.Record().Meta
		n++
	}
	switch {
	case rd.Err() != nil:
		return 0, rd.Err()
	case rd.Tail().Bytes > 0:
		return 0, errors.New("segment ends in bytes that are not a record")
	case n == 0 || n != seg.Records:
		return 0, fmt.Errorf("segment holds %d records, manifest says %d", n, seg.Records)
	case first.Rev != seg.First:
		return 0, fmt.Errorf("segment starts at revision %d, manifest says %d", first.Rev, seg.First)
	}
	return last.Through(), nil
}

// copySegment copies archive file old to new durably: a temporary file,
// synced, renamed, and the directory synced.
func (s *Store) copySegment(id session.SessionID, old, new string) (err error) {
	dir := archive.Dir(id)
	src, err := s.root.FS.OpenFile(dir+"/"+old, layout.RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }() // read-only
	tmp := dir + "/.segment-" + layout.RandomSuffix() + layout.TmpSuffix
	dst, err := s.root.FS.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return err
	}
	defer func() {
		if dst != nil {
			_ = dst.Close() // failed already
		}
		if err != nil {
			_ = s.root.FS.Remove(tmp)
		}
	}()
	if _, err = io.Copy(dst, src); err != nil {
		return err
	}
	if err = dst.Sync(); err != nil {
		return err
	}
	err, dst = dst.Close(), nil
	if err != nil {
		return err
	}
	if err = s.root.FS.Rename(tmp, dir+"/"+new); err != nil {
		return err
	}
	return s.root.FS.SyncDir(dir)
}
