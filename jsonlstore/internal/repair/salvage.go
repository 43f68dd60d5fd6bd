package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/compact"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Salvage is the repair that keeps every revision that can still be read
// (maintenance.RepairOptions.Salvage). Under the lease it reads the log
// forwards with a salvaging reader, which goes on past damage, and plans a
// new log:
//
//   - a record whose line repeats an earlier one exactly is a copy: it is
//     dropped;
//   - a damaged line, a record that repeats a revision with other bytes or
//     goes back in revision, generation or time, and a delta that cannot
//     be rebuilt (its base is among the damage) are set aside;
//   - every other record is kept, byte for byte, revision numbers
//     unchanged;
//   - revisions that nothing kept stands for get a gap record (FORMAT.md,
//     "Repaired logs") naming why and the forensic file that holds their
//     bytes, so that readers report them instead of failing the session;
//   - a log whose last revisions are lost ends with a full record, the
//     next revision, restoring the last one that can be read, so the
//     session goes on from there.
//
// Every byte set aside is copied into a forensic file (synced, with its
// directory) before anything changes; summary.json is moved into forensic/
// durably (it vouches for the old log); the new log is written beside the
// old one, synced, renamed over it, and the directory synced. A crash
// leaves the old log or the new one. Damage in the archives, a newer
// program's records, or a log with nothing readable are left as they are.

// salvageSpan is a run of the old log's bytes that the new log does not
// keep.
type salvageSpan struct {
	off, n int64
	why    string
	file   string // the forensic copy, once made
}

// salvagePiece is one piece of the new log: a run of kept lines of the
// old log, or a record to write (a gap, a restoring full record).
type salvagePiece struct {
	off, n int64
	gap    *salvageGap
	line   []byte
}

type salvageGap struct {
	record.Meta
	last uint64
	why  string
	span int // index of the span holding its bytes, -1 for none
}

type salvagePlan struct {
	pieces []salvagePiece
	spans  []salvageSpan
	last   record.Meta // the last kept record
	keptN  int
	dups   int
	gaps   []maintenance.SalvagedGap
	found  *sessionstore.Finding // the first damage met (maintenance.RepairReport.Found)
}

// planSalvage reads v and plans its salvage.
func (s *Store) planSalvage(ctx context.Context, id session.SessionID, v *logfile.View) (*salvagePlan, error) {
	pl := &salvagePlan{}
	blobs := verify.NewBlobs(s.root.FS, id)
	rd := v.Reader(record.Resumed())
	rd.Salvage = true
	snaps := record.NewSnapshots(id, v.MaxPayload)
	kept := map[uint64][2]int64{} // revision -> offset and length of its kept line
	var open *salvageGap          // revisions missing since the last kept record
	var pos int64                 // end of the last line handled
	have := false
	// The log's first revision is 1 unless older ones are archived; then
	// the first readable record is taken as the start.
	first := uint64(0)
	if _, err := s.root.FS.Lstat(archive.Dir(id)); errors.Is(err, fs.ErrNotExist) {
		first = 1
	}
	setAside := func(off, n int64, why string) int {
		if k := len(pl.spans) - 1; k >= 0 && pl.spans[k].off+pl.spans[k].n == off && open != nil && open.span == k {
			pl.spans[k].n += n // one run of damage
			return k
		}
		pl.spans = append(pl.spans, salvageSpan{off: off, n: n, why: why})
		return len(pl.spans) - 1
	}
	// note keeps the first damage met, as Verify reports corruption (err,
	// when it is a *sessionstore.CorruptionError), or else as f says.
	note := func(err error, f sessionstore.Finding) {
		if pl.found != nil {
			return
		}
		var ce *sessionstore.CorruptionError
		if errors.As(err, &ce) {
			f = sessionstore.FindingOf(ce)
		}
		pl.found = &f
	}
	miss := func(first, last uint64, why string, span int) {
		if open == nil {
			open = &salvageGap{Meta: pl.last, span: -1}
			open.Rev, open.why = first, why
		}
		open.last = last
		if open.span < 0 {
			open.span = span
		}
	}
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := rd.Record()
		damaged := -1
		if r.Offset > pos {
			damaged = setAside(pos, r.Offset-pos, "damaged lines")
			note(rd.Damage(), sessionstore.Finding{File: v.Name, Offset: pos, Message: fmt.Sprintf("%d bytes of damaged lines", r.Offset-pos)})
		}
		pos = r.End()
		if !rd.Accepted() {
			// A repeated or misplaced record: a copy when its bytes are
			// those of the kept line of its revision.
			note(rd.Damage(), sessionstore.Finding{File: v.Name, Offset: r.Offset, Revision: r.Rev, Message: fmt.Sprintf("revision %d out of sequence", r.Rev)})
			if k, ok := kept[r.Rev]; ok && k[1] == r.LineLen && s.sameBytes(v, k[0], r.Offset, r.LineLen) {
				pl.dups++
				setAside(r.Offset, r.LineLen, fmt.Sprintf("a copy of revision %d", r.Rev))
			} else {
				setAside(r.Offset, r.LineLen, fmt.Sprintf("revision %d out of sequence: %v", r.Rev, rd.Damage()))
			}
			continue
		}
		next := r.Rev
		switch {
		case have:
			next = pl.last.Through() + 1
		case first > 0:
			next = first
		}
		if r.Rev > next {
			why := "missing from the log"
			if rd.Damage() != nil {
				why = rd.Damage().Error()
			}
			miss(next, r.Rev-1, why, damaged)
			note(rd.Damage(), sessionstore.Finding{File: v.Name, Offset: r.Offset, Revision: next, Message: fmt.Sprintf("revisions %d to %d are %s", next, r.Rev-1, why)})
			snaps.Lose(errors.New(why))
		}
		err := snaps.Add(r)
		if err == nil && r.Kind == record.KindFull {
			// A full record must be a snapshot of this session (its pages
			// read, its content left out of line), or nothing can build on
			// it; and so must the content it references be there.
			c := blobfile.NewPageCache(s.root.FS, id)
			var rec sessionstore.Record
			rec, err = logfile.DecodeRecord(id, r, r.Payload, c)
			c.Close()
			if err == nil {
				err = blobs.Check(r, rec.Snapshot.Messages)
			}
			if err != nil {
				snaps.Lose(err)
			}
		}
		if err == nil && r.Kind == record.KindDelta && r.Version >= record.Version4 {
			// A delta whose new messages reference content that is gone
			// or damaged cannot be read back either.
			if err = blobs.CheckDelta(r); err != nil {
				snaps.Lose(err)
			}
		}
		if err != nil && !logfile.IsCorruption(err) {
			// A blob or page the store may not read (a permission or
			// I/O error) is no evidence of damage: setting aside the
			// revisions that reference it would lose acknowledged
			// revisions. Salvage refuses, and changes nothing.
			return nil, layout.OpErr("repair", id, fmt.Errorf("revision %d cannot be checked, so nothing was salvaged: %w", r.Rev, err))
		}
		if err != nil {
			note(err, sessionstore.Finding{File: v.Name, Offset: r.Offset, Revision: r.Rev, Message: err.Error()})
			span := setAside(r.Offset, r.LineLen, "")
			miss(r.Rev, r.Rev, err.Error(), span)
			continue
		}
		if open != nil {
			if !have { // a gap at the start takes the first kept record's time
				open.Gen, open.Time = r.Gen, r.Time
			}
			pl.closeGap(open)
			open = nil
		}
		if k := len(pl.pieces) - 1; k >= 0 && pl.pieces[k].gap == nil && pl.pieces[k].line == nil && pl.pieces[k].off+pl.pieces[k].n == r.Offset {
			pl.pieces[k].n += r.LineLen
		} else {
			pl.pieces = append(pl.pieces, salvagePiece{off: r.Offset, n: r.LineLen})
		}
		kept[r.Rev] = [2]int64{r.Offset, r.LineLen}
		pl.last, have = r.Meta, true
		pl.keptN++
	}
	var ne *sessionstore.NewerRecordError
	switch err := rd.Err(); {
	case errors.As(err, &ne):
		return nil, layout.OpErr("repair", id, fmt.Errorf("the log holds records of a newer version, which this program never removes: %w", ne))
	case err != nil:
		return nil, err
	case !have:
		return nil, &sessionstore.CorruptionError{ID: id, Path: v.Name, Err: errors.New("the log holds no record that can be read: nothing to salvage")}
	}
	if pos < v.Size {
		setAside(pos, v.Size-pos, "bytes after the last record")
		note(nil, sessionstore.Finding{File: v.Name, Offset: pos, Revision: pl.last.Through() + 1, Message: fmt.Sprintf("%d bytes after the last record", v.Size-pos)})
	}
	// Revisions other evidence proves committed, past the last kept one.
	if ev := logfile.Evidence(s.root.FS, id, v); ev.Revision > pl.last.Through() {
		why := fmt.Sprintf("committed (%s) but no longer in the log", ev.Source)
		miss(pl.last.Through()+1, ev.Revision, why, -1)
		note(nil, sessionstore.Finding{File: v.Name, Revision: pl.last.Through() + 1, Message: fmt.Sprintf("revisions %d to %d were %s", pl.last.Through()+1, ev.Revision, why)})
	}
	if open != nil {
		pl.closeGap(open)
		open = nil
	}
	return pl, nil
}

func (pl *salvagePlan) closeGap(g *salvageGap) {
	pl.pieces = append(pl.pieces, salvagePiece{gap: g})
	pl.gaps = append(pl.gaps, maintenance.SalvagedGap{First: g.Rev, Last: g.last, Reason: g.why})
	g.Kind, g.Version = record.KindGap, record.VersionOf(record.KindGap)
	// The gap stands for its revisions in the sequence.
	m := g.Meta
	m.Last = g.last
	pl.last = m
}

// sameBytes reports whether the n bytes of v at a and at b are equal.
func (s *Store) sameBytes(v *logfile.View, a, b, n int64) bool {
	x, y := make([]byte, n), make([]byte, n)
	if _, err := v.F.ReadAt(x, a); err != nil {
		return false
	}
	if _, err := v.F.ReadAt(y, b); err != nil {
		return false
	}
	return bytes.Equal(x, y)
}

// salvageLog runs under the lease: it plans the salvage of session id's log
// and, when anything is to change, carries it out (see Salvage above).
func (s *Store) salvageLog(ctx context.Context, id session.SessionID, rep *maintenance.RepairReport) error {
	v, err := logfile.Open(s.root.FS, id, s.root.MaxRecordBytes)
	if err != nil {
		return layout.OpErr("repair", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	pl, err := s.planSalvage(ctx, id, v)
	if err != nil {
		return err
	}
	if len(pl.spans) == 0 && len(pl.gaps) == 0 {
		return nil // nothing to set aside: normal recovery does the rest
	}
	var restored uint64
	// A log never ends with a gap: the last readable revision is restored
	// as the next one.
	if k := len(pl.pieces) - 1; pl.pieces[k].gap != nil {
		line, err := s.restoringRecord(ctx, id, v, pl)
		if err != nil {
			return layout.OpErr("repair", id, fmt.Errorf("restore the last readable revision: %w", err))
		}
		pl.pieces = append(pl.pieces, salvagePiece{line: line})
		restored = pl.last.Through() + 1
	}
	// Every byte set aside is kept, durably, before anything changes.
	for i := range pl.spans {
		sp := &pl.spans[i]
		name, err := s.host.SaveForensic(id, "repair", sp.off, v, sp.n)
		if err != nil {
			return layout.OpErr("repair", id, fmt.Errorf("save removed bytes: %w", err))
		}
		sp.file = name
		rep.ForensicFiles = append(rep.ForensicFiles, name)
		rep.BytesRemoved += sp.n
	}
	name, err := s.moveSummaryAside(id)
	if err != nil {
		return layout.OpErr("repair", id, fmt.Errorf("move summary aside: %w", err))
	}
	if name != "" {
		rep.ForensicFiles = append(rep.ForensicFiles, name)
	}
	gi := 0
	for _, p := range pl.pieces {
		if g := p.gap; g != nil {
			if g.span >= 0 {
				pl.gaps[gi].Forensic = pl.spans[g.span].file
			}
			gi++
		}
	}
	if _, err := compact.PublishLog(s.root.FS, id, "repair", func(w io.Writer) error {
		gi := 0
		for _, p := range pl.pieces {
			switch {
			case p.gap != nil:
				sg := pl.gaps[gi]
				gi++
				if _, err := w.Write(record.Encode(p.gap.Meta, record.EncodeGap(record.Gap{Last: p.gap.last, Reason: p.gap.why, Forensic: sg.Forensic}))); err != nil {
					return err
				}
			case p.line != nil:
				if _, err := w.Write(p.line); err != nil {
					return err
				}
			default:
				if _, err := io.Copy(w, io.NewSectionReader(v.F, p.off, p.n)); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return layout.OpErr("repair", id, err)
	}
	rep.Salvaged = &maintenance.SalvageReport{Kept: pl.keptN, DuplicatesRemoved: pl.dups, Gaps: pl.gaps, Restored: restored}
	rep.Found = pl.found
	s.root.Logger.Info("jsonlstore: repair salvaged the log", "session", id, "kept", pl.keptN,
		"duplicates", pl.dups, "gaps", len(pl.gaps), "forensic", rep.ForensicFiles)
	return nil
}

// restoringRecord returns the line of a full record, the revision after
// the plan's last, holding the snapshot of the last kept revision (read
// again from v as the plan kept it), with the generation of the record
// before it (the repair's own lease must stay above every generation in
// the log).
func (s *Store) restoringRecord(ctx context.Context, id session.SessionID, v *logfile.View, pl *salvagePlan) ([]byte, error) {
	var keptLast *record.Rec
	var snap []byte
	var rd *record.Reader
	snaps := record.NewSnapshots(id, v.MaxPayload)
	for _, p := range pl.pieces {
		switch {
		case p.gap != nil:
			// After a gap the sequence jumps and a full record starts again.
			rd, snaps = nil, record.NewSnapshots(id, v.MaxPayload)
			continue
		case p.line != nil:
			continue
		}
		if rd == nil {
			rd = record.NewReader(id, v.MaxPayload, record.Resumed())
		}
		rd.Read(record.Source{R: io.NewSectionReader(v.F, p.off, p.n), Size: p.n, Path: v.Name})
		for rd.Next() {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := snaps.Add(rd.Record()); err != nil {
				return nil, err
			}
			keptLast = rd.Record().Clone()
		}
		if err := rd.Err(); err != nil {
			return nil, err
		}
		snap = snaps.Bytes()
	}
	if keptLast == nil || snap == nil {
		return nil, errors.New("no readable revision to restore")
	}
	m := record.Meta{Version: record.VersionOf(record.KindFull), Schema: keptLast.Schema, Rev: pl.last.Through() + 1, Gen: pl.last.Gen,
		Time: record.Later(s.root.Now().UTC(), pl.last.Time), Kind: record.KindFull}
	return record.Encode(m, snap), nil
}
