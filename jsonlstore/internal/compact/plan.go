package compact

import (
	"context"
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// plan is where a compaction cuts a log.
type plan struct {
	skipped   string          // why nothing is trimmed ("" when something is)
	seg       archive.Segment // the trimmed records (File set when any)
	cut       int64           // offset of the first kept record
	firstKept uint64
	latest    uint64
}

// report fills in rep for a log of size bytes.
func (pl plan) report(rep maintenance.CompactReport, size int64) maintenance.CompactReport {
	rep.Skipped, rep.FirstKept, rep.Latest = pl.skipped, pl.firstKept, pl.latest
	rep.LogBytesBefore, rep.LogBytesAfter = size, size
	if pl.skipped == "" {
		rep.RevisionsTrimmed = int64(pl.seg.Last - pl.seg.First + 1) //nolint:gosec // G115: a revision range, far below 2^63
		rep.LogBytesAfter = size - pl.cut
		rep.Segment = archive.Dir(rep.ID) + "/" + pl.seg.File
	}
	return rep
}

// planCut reads v, whose latest revision is latest, forwards until
// the first revision p keeps — or, when that is a delta record, the full
// record its chain starts at — calling trim for each record before it
// (without its payload: trim reads the line from v). It checks every
// record and the sequence on the way.
func planCut(ctx context.Context, root *layout.Root, v *logfile.View, latest uint64, p maintenance.CompactPolicy, trim func(r *record.Rec) error) (plan, error) {
	pl := plan{latest: latest, cut: -1}
	// The cut: keep a revision if either rule keeps it. KeepLast gives a
	// revision number; KeepSince the first record at or after a time,
	// found while streaming (record times never decrease).
	cutByCount := uint64(0)
	if p.KeepLast > 0 {
		cutByCount = 1
		if uint64(p.KeepLast) < latest {
			cutByCount = latest - uint64(p.KeepLast) + 1
		}
	}
	var since time.Time
	if p.KeepSince > 0 {
		since = root.Now().Add(-p.KeepSince)
	}
	if cutByCount == 0 && since.IsZero() {
		pl.skipped = "no policy"
		return pl, nil
	}
	// A record stands for revisions Rev to Through(): a gap record for
	// all those a repair set aside. It is kept when any of them is, and
	// a segment ends at the last revision its last record stands for
	// (the manifest's ranges are revisions, not records).
	keep := func(r *record.Rec) bool {
		return r.Through() >= latest || (cutByCount > 0 && r.Through() >= cutByCount) || (!since.IsZero() && !r.Time.Before(since))
	}
	seg := &pl.seg
	// The first kept record must be a full record (or a gap): a delta
	// needs its base in the log. Records since the last full one wait in
	// pending until the next full record (or gap) shows that nothing kept
	// needs them; when the cut lands on a delta, they are kept with it.
	var pending []record.Rec
	trimPending := func() error {
		for i := range pending {
			r := &pending[i]
			if seg.First == 0 {
				seg.First = r.Rev
			}
			seg.Last = r.Through()
			seg.Records++
			seg.Bytes += r.LineLen
			if err := trim(r); err != nil {
				return err
			}
		}
		pending = pending[:0]
		return nil
	}
	rd := v.Reader(record.Resumed())
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return pl, err
		}
		r := rd.Record()
		if r.Kind == record.KindFull || r.Kind == record.KindGap {
			// Nothing from here on builds on the records before: a gap
			// is followed by a full record.
			if err := trimPending(); err != nil {
				return pl, err
			}
		}
		if keep(r) {
			pl.cut, pl.firstKept = r.Offset, r.Rev
			if len(pending) > 0 {
				pl.cut, pl.firstKept = pending[0].Offset, pending[0].Rev
			}
			break
		}
		pending = append(pending, record.Rec{Meta: r.Meta, Path: r.Path, Offset: r.Offset, LineLen: r.LineLen})
	}
	if err := rd.Err(); err != nil {
		return pl, fmt.Errorf("compaction met a bad record: %w", err)
	}
	if pl.cut < 0 {
		// The scan ended before the latest revision: the log is not what
		// its holder (or Load) said.
		return pl, record.ErrShrunk
	}
	if seg.Records == 0 {
		pl.skipped = "nothing to trim"
		return pl, nil
	}
	seg.File = archive.SegmentName(seg.First, seg.Last)
	return pl, nil
}
