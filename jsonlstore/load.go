package jsonlstore

import (
	"context"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// decodeRecord turns r, a verified record whose snapshot (its payload, or
// what its delta chain rebuilds) is snap, into a contract Record.
func decodeRecord(id session.SessionID, r *rawRecord, snap []byte) (sessionstore.Record, error) {
	decoded, err := sessnap.Unmarshal(snap)
	if err != nil {
		return sessionstore.Record{}, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload is not a snapshot: %w", err)}
	}
	if decoded.ID != id {
		return sessionstore.Record{}, &sessionstore.CorruptionError{ID: id, Path: r.Path, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload belongs to session %q", decoded.ID)}
	}
	return sessionstore.Record{ID: id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: decoded}, nil
}

// loadLatest reads the view's latest revision: its last record and the
// chain that rebuilds it, read backwards from the end.
func (s *Store) loadLatest(id session.SessionID, v *view) (*rawRecord, sessionstore.Record, error) {
	last, _, err := s.latest(id, v)
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	snap, err := s.snapshotOf(id, v, last)
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	rec, err := decodeRecord(id, last, snap)
	return last, rec, err
}

// Load returns the latest revision, read from the end of the log: its cost
// is one record, or for a delta its chain (bounded by the snapshot's size),
// whatever the length of the history.
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *view) error {
		var err error
		_, rec, err = s.loadLatest(id, v)
		return err
	})
	return rec, err
}

// LoadRevision returns revision rev (archived ones included). The latest
// is read as Load reads it; an older one by reading forwards to it from
// the log's start (or the archives', for an archived one), keeping the
// snapshot as pieces on the way (record.Snapshots), so the cost is
// reading the records before it, not rebuilding each. A revision a repair
// set aside is a *sessionstore.GapError.
func (s *Store) LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *view) error {
		last, _, err := s.latest(id, v)
		if err != nil {
			return err
		}
		if rev == 0 || rev > last.Through() {
			return fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, last.Through())
		}
		if rev >= last.Rev {
			_, rec, err = s.loadLatest(id, v)
			return err
		}
		// Read forwards to rev. In the log, past damage that rev does not
		// depend on (a salvaging reader): a revision is readable when its
		// own chain is.
		var h interface {
			Next() bool
			Record() *rawRecord
			Err() error
		}
		var rd *record.Reader
		if first, ok := firstRevOf(v); ok && rev >= first {
			rd = v.reader(record.Resumed())
			rd.Salvage = true
			h = rd
		} else {
			hs := s.scanHistory(id, v)
			defer hs.Close()
			h = hs
		}
		snaps := record.NewSnapshots(id, v.maxPayload)
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
			if r.Kind == KindGap {
				return gapError(id, r)
			}
			rec, err = decodeRecord(id, r, snaps.Bytes())
			return err
		}
		if err := h.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w: session %s revision %d", sessionstore.ErrNotFound, id, rev)
	})
	return rec, err
}
