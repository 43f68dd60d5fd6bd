package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Readers never modify anything and take no lease. Each read works on a
// view (see reader.go); an anomaly — a damaged line followed by valid ones,
// a broken sequence, a revision a summary evidences but the log lacks — is
// reported as corruption only when a fresh view of the same file shows the
// same anomaly with the same bytes. Anything else is the file changing
// under the reader (a new holder truncating an uncommitted tail), and the
// read is retried, so a live store never produces false corruption.

const maxReadAttempts = 5

// anomaly is a possible corruption seen by one view.
type anomaly struct {
	ce    *sessionstore.CorruptionError
	id    any    // the view's file identity
	bytes []byte // the offending line, when there is one
}

func (a *anomaly) Error() string { return a.ce.Error() }

func (a *anomaly) same(b *anomaly) bool {
	return b != nil && a.id == b.id && a.ce.Offset == b.ce.Offset && bytes.Equal(a.bytes, b.bytes)
}

func (s *Store) newAnomaly(v *view, id session.SessionID, off int64, rev uint64, lineBytes []byte, err error) *anomaly {
	return &anomaly{
		ce:    &sessionstore.CorruptionError{ID: id, Path: v.name, Offset: off, Revision: rev, Err: err},
		id:    v.id,
		bytes: bytes.Clone(lineBytes),
	}
}

// read runs fn on fresh views of session id's log until it succeeds, fails
// with something other than an unconfirmed anomaly, or the same anomaly is
// seen twice in a row.
func (s *Store) read(ctx context.Context, id session.SessionID, fn func(v *view) error) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	var prev *anomaly
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := openView(s.fs, logPath(id), s.opts.MaxRecordBytes)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if xerr := s.exists(id); xerr != nil {
					return xerr
				}
				return fmt.Errorf("%w: session %s has no log", sessionstore.ErrNotFound, id)
			}
			return fmt.Errorf("jsonlstore: read %s: %w", id, err)
		}
		err = fn(v)
		_ = v.Close() // read-only
		var a *anomaly
		switch {
		case errors.Is(err, errViewChanged) && attempt < maxReadAttempts:
			continue
		case errors.Is(err, errViewChanged):
			return fmt.Errorf("jsonlstore: read %s: log kept changing under the reader", id)
		case errors.As(err, &a):
			if a.same(prev) || attempt >= maxReadAttempts {
				return a.ce
			}
			prev = a
			continue
		}
		return err
	}
}

// decodeRecord turns a verified raw record, whose snapshot (its payload,
// or for a delta the snapshot it rebuilds) is snap, into a contract Record.
func decodeRecord(id session.SessionID, v *view, r *rawRecord, snap []byte) (sessionstore.Record, error) {
	if r.Kind != KindFull && r.Kind != KindDelta {
		return sessionstore.Record{}, unknownKind(id, r)
	}
	decoded, err := sessnap.Unmarshal(snap)
	if err != nil {
		return sessionstore.Record{}, &sessionstore.CorruptionError{ID: id, Path: v.name, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload is not a snapshot: %w", err)}
	}
	if decoded.ID != id {
		return sessionstore.Record{}, &sessionstore.CorruptionError{ID: id, Path: v.name, Offset: r.Offset, Revision: r.Rev,
			Err: fmt.Errorf("payload belongs to session %q", decoded.ID)}
	}
	return sessionstore.Record{ID: id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: decoded}, nil
}

// decodeLast decodes r, the last record of v, rebuilding its chain when it
// is a delta.
func (s *Store) decodeLast(id session.SessionID, v *view, r *rawRecord) (sessionstore.Record, error) {
	snap, err := s.snapshotOf(id, v, r)
	if err != nil {
		return sessionstore.Record{}, err
	}
	return decodeRecord(id, v, r, snap)
}

// lastOf reads the latest valid record of v, checking that no other
// evidence says a later revision was committed.
func (s *Store) lastOf(id session.SessionID, v *view) (*rawRecord, error) {
	last, t, err := v.last()
	if err != nil {
		return nil, err
	}
	if last == nil {
		return nil, s.newAnomaly(v, id, 0, 0, t.First, errors.New("log holds no valid record"))
	}
	if ev := s.evidencedRevision(id, v); ev > last.Rev {
		return nil, s.newAnomaly(v, id, t.Start, last.Rev+1, t.First,
			fmt.Errorf("revision %d was committed (summary) but the log's last valid record is %d", ev, last.Rev))
	}
	return last, nil
}

// Load returns the latest revision, read from the end of the log: its cost
// is one record, or for a delta its chain (bounded by the snapshot's size,
// see delta.go), whatever the length of the history.
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *view) error {
		last, err := s.lastOf(id, v)
		if err != nil {
			return err
		}
		rec, err = s.decodeLast(id, v, last)
		return err
	})
	return rec, err
}

// LoadRevision returns revision rev.
func (s *Store) LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	var rec sessionstore.Record
	err := s.read(ctx, id, func(v *view) error {
		last, err := s.lastOf(id, v)
		if err != nil {
			return err
		}
		if rev == 0 || rev > last.Rev {
			return fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, last.Rev)
		}
		if rev == last.Rev {
			rec, err = s.decodeLast(id, v, last)
			return err
		}
		// Read forwards to rev, collecting the chain that ends there.
		acc := chainAcc{max: v.maxPayload}
		found := func(r *rawRecord, file string) error {
			acc.add(r)
			snap, bad, err := acc.snapshot()
			if err != nil {
				if bad == nil {
					bad = r
				}
				return &sessionstore.CorruptionError{ID: id, Path: file, Offset: bad.Offset, Revision: bad.Rev, Err: err}
			}
			rec, err = decodeRecord(id, v, r, snap)
			return err
		}
		var bad *anomaly
		errFound := errors.New("found")
		if first, err := firstRevOf(v); err == nil && rev < first {
			err := s.scanArchived(id, first, func(r *rawRecord) error {
				if r.Rev != rev {
					acc.add(r)
					return nil
				}
				if err := found(r, archiveDir(id)); err != nil {
					return callerErr{err}
				}
				return errStop
			})
			var ce callerErr
			switch {
			case errors.As(err, &ce):
				return ce.err
			case errors.Is(err, errStop):
				return nil
			case err != nil:
				return err
			}
			return fmt.Errorf("%w: session %s revision %d", sessionstore.ErrNotFound, id, rev)
		}
		err = v.scan(func(l *line) error {
			if l.Rec == nil {
				if bad == nil && !l.Partial {
					bad = s.newAnomaly(v, id, l.Offset, 0, l.Bytes, l.Err)
				}
				return nil
			}
			if l.Rec.Rev != rev {
				acc.add(l.Rec)
				return nil
			}
			if err := found(l.Rec, v.name); err != nil {
				return err
			}
			return errFound
		})
		switch {
		case errors.Is(err, errFound):
			return nil
		case err != nil:
			return err
		case bad != nil:
			return bad // the revision is missing because a record is damaged
		}
		return fmt.Errorf("%w: session %s revision %d", sessionstore.ErrNotFound, id, rev)
	})
	return rec, err
}

// History yields every revision in order. It stops at the first damaged
// record that valid records follow, yielding a *sessionstore.CorruptionError
// with its offset; a damaged last line is an uncommitted tail and is not
// part of the history.
func (s *Store) History(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	return func(yield func(sessionstore.Record, error) bool) {
		var yielded uint64 // revisions already yielded survive a retry
		stopped := false
		err := s.read(ctx, id, func(v *view) error {
			return s.scanHistory(ctx, id, v, func(rec sessionstore.Record) bool {
				if rec.Revision <= yielded {
					return true
				}
				yielded = rec.Revision
				if !yield(rec, nil) {
					stopped = true
					return false
				}
				return true
			})
		})
		if err != nil && !stopped {
			yield(sessionstore.Record{}, err)
		}
	}
}

var errStop = errors.New("stop")

// scanHistory reads v forwards, checking the sequence rules, and calls
// yield for each record.
func (s *Store) scanHistory(ctx context.Context, id session.SessionID, v *view, yield func(sessionstore.Record) bool) error {
	snaps := snapshots{id: id, max: v.maxPayload}
	at := s.placesOf(id, v)
	return s.scanRecords(ctx, id, v, func(r *rawRecord) (bool, error) {
		file, _ := at.file(r.Rev)
		snap, err := snaps.next(r, file)
		if err != nil {
			return false, err
		}
		rec, err := decodeRecord(id, v, r, snap)
		if err != nil {
			return false, err
		}
		return yield(rec), nil
	})
}

// scanRecords is scanHistory without decoding payloads: it checks framing,
// checksums and the sequence rules, and calls yield for each verified
// record (its payload aliases the scan buffer: copy what you keep). yield
// returns false to stop, or an error to fail the scan with.
func (s *Store) scanRecords(ctx context.Context, id session.SessionID, v *view, yield func(r *rawRecord) (bool, error)) error {
	var prev *rawRecord
	var bad *anomaly
	err := v.scan(func(l *line) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.Rec == nil {
			if bad == nil {
				bad = s.newAnomaly(v, id, l.Offset, 0, l.Bytes, l.Err)
			}
			return nil
		}
		if bad != nil {
			return bad // a damaged record followed by a valid one
		}
		r := l.Rec
		if prev == nil && r.Rev != 1 {
			// Revisions below the log's first are in the archives.
			var aprev *rawRecord
			err := s.scanArchived(id, r.Rev, func(ar *rawRecord) error {
				if aprev != nil && (ar.Gen < aprev.Gen || ar.Time.Before(aprev.Time)) {
					return archiveCorruption(id, manifestFile, ar.Rev, errors.New("generation or time goes back"))
				}
				aprev = &rawRecord{meta: ar.meta}
				more, err := yield(ar)
				if err != nil {
					return callerErr{err}
				}
				if !more {
					return errStop
				}
				return nil
			})
			var ce callerErr
			if errors.As(err, &ce) {
				return ce.err
			}
			if err != nil {
				return err
			}
			prev = aprev
		}
		if prev != nil {
			switch {
			case r.Rev != prev.Rev+1:
				return s.newAnomaly(v, id, r.Offset, prev.Rev+1, nil, fmt.Errorf("revision %d follows revision %d", r.Rev, prev.Rev))
			case r.Gen < prev.Gen:
				return s.newAnomaly(v, id, r.Offset, r.Rev, nil, fmt.Errorf("generation %d after generation %d", r.Gen, prev.Gen))
			case r.Time.Before(prev.Time):
				return s.newAnomaly(v, id, r.Offset, r.Rev, nil, fmt.Errorf("time %s before previous %s", r.Time, prev.Time))
			}
		}
		more, err := yield(r)
		if err != nil {
			return err
		}
		if !more {
			return errStop
		}
		prev = copyRecord(&rawRecord{meta: r.meta, Offset: r.Offset, LineLen: r.LineLen})
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	if err != nil {
		return err
	}
	if prev == nil {
		return s.newAnomaly(v, id, 0, 0, nil, errors.New("log holds no valid record"))
	}
	if ev := s.evidencedRevision(id, v); ev > prev.Rev {
		return s.newAnomaly(v, id, prev.End(), prev.Rev+1, nil,
			fmt.Errorf("revision %d was committed (summary) but the log's last valid record is %d", ev, prev.Rev))
	}
	return nil
}

// firstRevOf reads the revision of the view's first record.
func firstRevOf(v *view) (uint64, error) {
	var buf [64]byte
	n, _ := v.f.ReadAt(buf[:min(int64(len(buf)), v.size)], 0)
	rev, ok := peekRev(buf[:n])
	if !ok {
		return 0, errors.New("first record unreadable")
	}
	return rev, nil
}
