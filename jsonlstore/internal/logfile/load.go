package logfile

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// LoadLatest reads the view's latest revision: its last record and the
// chain that rebuilds it, read backwards from the end, with its content
// (or, light, without what is kept out of line).
func LoadLatest(fsys vfs.FS, id session.SessionID, v *View, light bool) (*record.Rec, sessionstore.Record, error) {
	last, snap, err := LatestSnapshot(fsys, id, v)
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	c := blobfile.CacheFor(fsys, id, light)
	defer c.Close()
	rec, err := DecodeRecord(id, last, snap, c)
	return last, rec, err
}

// LoadRevision reads revision rev of session id (jsonlstore.Store.LoadRevision
// says how): the latest as LoadLatest reads it, an older one by reading
// forwards to it, keeping the snapshot as pieces on the way; with light,
// without the content kept out of line.
func LoadRevision(ctx context.Context, root *layout.Root, id session.SessionID, rev uint64, light bool) (sessionstore.Record, error) {
	c := blobfile.CacheFor(root.FS, id, light)
	defer c.Close()
	var rec sessionstore.Record
	err := Read(ctx, root, id, func(v *View) error {
		last, _, err := Latest(root.FS, id, v)
		var ne *sessionstore.NewerRecordError
		switch {
		case errors.As(err, &ne) && last != nil:
			// The log ends with a newer program's record: the revisions
			// before it are read forwards, as History reads them (the
			// reader stops at that record, with ne, for any after it).
			if last.Rev > 0 && rev >= last.Rev {
				return err
			}
		case err != nil:
			return err
		case rev > last.Through():
			return fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, last.Through())
		case rev >= last.Rev:
			_, rec, err = LoadLatest(root.FS, id, v, light)
			return err
		}
		// Read forwards to rev. In the log, past damage that rev does not
		// depend on (a salvaging reader): a revision is readable when its
		// own chain is.
		var h interface {
			Next() bool
			Record() *record.Rec
			Err() error
		}
		var rd *record.Reader
		if first, ok := FirstRev(v); ok && rev >= first {
			rd = v.Reader(record.Resumed())
			rd.Salvage = true
			h = rd
		} else {
			hs := NewScan(root.FS, id, v)
			defer hs.Close()
			h = hs
		}
		snaps := record.NewSnapshots(id, v.MaxPayload)
		for h.Next() {
			r := h.Record()
			if rd != nil && rd.Damage() != nil {
				if !rd.Accepted() {
					continue // a repeated or misplaced record: not part of the sequence
				}
				if r.Rev > rev {
					return rd.Damage() // rev is among the records the damage took
				}
				snaps.Lose(rd.Damage())
			}
			if err := snaps.Add(r); err != nil {
				return err
			}
			if r.Through() < rev {
				continue
			}
			if r.Kind == record.KindGap {
				return GapError(id, r)
			}
			rec, err = DecodeRecord(id, r, snaps.Bytes(), c)
			return err
		}
		if err := h.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w: session %s revision %d", sessionstore.ErrNotFound, id, rev)
	})
	return rec, err
}
