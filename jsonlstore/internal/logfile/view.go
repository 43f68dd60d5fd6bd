package logfile

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Readers never modify anything and take no lease. A reader works on a
// View: the log as it was when the reader opened it — its identity
// (device, inode) and size. It never reads past that size, so concurrent
// appends are invisible to it, and a replacement of the log (compaction,
// repair) does not affect an open view. Only the bytes after the last
// valid record (an uncommitted tail) can change under a view, when a new
// holder truncates them. So a read that meets an anomaly — corruption by
// the rules of package record — reports it only when a fresh view of the
// same file shows the same anomaly at the same place; anything else is
// the file changing under the reader, and the read is retried. A live
// store never produces false corruption.

// maxReadAttempts is how many fresh views a read tries before it gives up
// on a log that keeps changing under it.
const maxReadAttempts = 5

// View is a log opened for reading.
type View struct {
	F    vfs.File
	Name string // path of the log relative to the store root
	ID   vfs.Identity
	Size int64
	// mtime is the log's modification time when it was opened
	// (nanoseconds), for a cache of exactly this state of it (the catalog).
	Mtime int64
	// maxPayload bounds what a reader holds of one record.
	MaxPayload int
	Back       *record.Back
	Session    session.SessionID
}

// Open opens a view of session id's log, read with the record cap
// that a store whose own cap is own reads it with (layout.ReadCap).
func Open(fsys vfs.FS, id session.SessionID, own int) (*View, error) {
	maxPayload := layout.ReadCap(fsys, id, own)
	name := layout.LogPath(id)
	f, err := fsys.OpenFile(name, layout.RDONLY, 0)
	// A compaction may rename a new log over the old one between the
	// symlink check and the open; opening again sees the new log.
	for i := 0; i < maxReadAttempts && errors.Is(err, vfs.ErrReplaced); i++ {
		f, err = fsys.OpenFile(name, layout.RDONLY, 0)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = kindErr(name, fi) // a directory opens, but is no log
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &View{
		F: f, Name: name, ID: vfs.IdentityOf(fi), Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), MaxPayload: maxPayload, Session: id,
		Back: record.NewBack(f, fi.Size(), id, name, maxPayload),
	}, nil
}

// Close closes the view.
func (v *View) Close() error { return v.F.Close() }

// Reader returns a forward reader of the view's log whose sequence
// continues from seq.
func (v *View) Reader(seq record.Seq) *record.Reader {
	rd := record.NewReader(v.Session, v.MaxPayload, seq)
	rd.Read(v.Source())
	return rd
}

// Source is the view's log as a source of records.
func (v *View) Source() record.Source {
	return record.Source{R: io.NewSectionReader(v.F, 0, v.Size), Size: v.Size, Path: v.Name, Tail: true}
}

// anomaly is corruption seen on one view, to be confirmed on another.
type anomaly struct {
	id  vfs.Identity
	ce  *sessionstore.CorruptionError
	msg string
}

func (a anomaly) same(b *anomaly) bool {
	return b != nil && a.id == b.id && a.ce.Path == b.ce.Path && a.ce.Offset == b.ce.Offset && a.msg == b.msg
}

// Read runs fn on fresh views of session id's log until it succeeds, fails
// with something other than unconfirmed corruption, or sees the same
// corruption twice in a row on the same file.
func Read(ctx context.Context, root *layout.Root, id session.SessionID, fn func(v *View) error) error {
	var prev *anomaly
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := Open(root.FS, id, root.MaxRecordBytes)
		if err != nil {
			if lerr := LogErr(root, id, err); lerr != nil {
				return lerr // gone, not a session, or damaged (LogErr)
			}
			return layout.OpErr("read", id, err)
		}
		err = fn(v)
		_ = v.Close() // read-only
		var ce *sessionstore.CorruptionError
		switch {
		case errors.Is(err, record.ErrShrunk) && attempt < maxReadAttempts:
			continue
		case errors.Is(err, record.ErrShrunk):
			return layout.OpErr("read", id, errors.New("log kept changing under the reader"))
		case errors.As(err, &ce):
			a := &anomaly{id: v.ID, ce: ce, msg: ce.Error()}
			if a.same(prev) || attempt >= maxReadAttempts {
				return err
			}
			prev = a
			continue
		}
		return err
	}
}

// Evidence is what summary.json, when written for the very log file v
// views, says was committed to it: its revision and that record's
// offset. A summary of another file (a copy, a compacted log) proves
// nothing about this one. A summary of a longer log than the view is about
// records appended since the view was opened — unless the file is now
// shorter than the summary says: then it shrank in place and lost records
// the summary proves were committed, whatever its size.
func Evidence(fsys vfs.FS, id session.SessionID, v *View) record.Evidence {
	sf, ok := readEvidence(fsys, id)
	if !ok || sf.Log != v.ID {
		return record.Evidence{}
	}
	if sf.LogSize > v.Size {
		if fi, err := v.F.Stat(); err != nil || fi.Size() >= sf.LogSize {
			return record.Evidence{} // appended after the view: a fresh one sees them
		}
	}
	return record.Evidence{Revision: sf.Revision, Offset: sf.LastOffset, Source: layout.SummaryPath(id)}
}

// Latest returns the view's last record, checking it against the evidence
// of committed revisions, and the tail after it. A newer program's last
// record is a *sessionstore.NewerRecordError.
func Latest(fsys vfs.FS, id session.SessionID, v *View) (*record.Rec, record.Tail, error) {
	last, t, err := v.Back.Last()
	if err != nil {
		return last, t, err
	}
	if last == nil {
		return nil, t, record.ClassifyTail(id, v.Name, nil, t, record.Evidence{}, nil)
	}
	if ev := Evidence(fsys, id, v); ev.Revision > last.Through() {
		return nil, t, record.ClassifyTail(id, v.Name, last, t, ev, nil)
	}
	return last, t, nil
}

// LatestSnapshot returns the view's last record (latest) and rebuilds its
// snapshot, checking the records it builds on (record.Back.ChainTo).
func LatestSnapshot(fsys vfs.FS, id session.SessionID, v *View) (*record.Rec, []byte, error) {
	last, _, err := Latest(fsys, id, v)
	if err != nil {
		return nil, nil, err
	}
	full, deltas, err := v.Back.ChainTo(last, false)
	if err != nil {
		return nil, nil, err
	}
	snap, err := RebuildChain(id, last, full, deltas, v.MaxPayload)
	return last, snap, err
}

// RebuildChain returns the snapshot of last, which full and deltas (its
// chain, from record.Back.ChainTo) rebuild.
func RebuildChain(id session.SessionID, last, full *record.Rec, deltas []*record.Rec, maxPayload int) ([]byte, error) {
	if last.Kind == record.KindGap {
		return nil, GapError(id, last)
	}
	if len(deltas) == 0 {
		return full.Payload, nil
	}
	payloads := make([][]byte, len(deltas))
	for i, d := range deltas {
		payloads[i] = d.Payload
	}
	snap, err := record.ApplyChain(full.Payload, payloads, maxPayload)
	if err != nil {
		return nil, ChainError(id, last, full, err)
	}
	return snap, nil
}

// ChainError is the corruption of a chain, from full to last, that does
// not rebuild last (err says why).
func ChainError(id session.SessionID, last, full *record.Rec, err error) error {
	return &sessionstore.CorruptionError{ID: id, Path: last.Path, Offset: last.Offset, Revision: last.Rev,
		Err: fmt.Errorf("delta chain from revision %d does not rebuild revision %d: %w", full.Rev, last.Rev, err)}
}

// GapError is the error for the revisions a gap record stands for.
func GapError(id session.SessionID, r *record.Rec) error {
	g, _ := record.ParseGap(r.Payload) // parsed once already
	return &sessionstore.GapError{ID: id, First: r.Rev, Last: r.Through(), Reason: g.Reason, Forensic: g.Forensic}
}
