package jsonlstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// IDs returns the ID of every session directory under the root, in ID
// order, sessions whose logs are damaged included (List leaves those
// out). Errors: ErrClosed, I/O errors.
func (s *Store) IDs(ctx context.Context) ([]session.SessionID, error) {
	if s.closed.Load() {
		return nil, sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids, err := s.sessionIDs()
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// Import creates session id from its record lines, copied verbatim: the
// lines (each with its newline, as RecordLines yields them) must be
// revisions 1, 2, … of session id, and each must pass the checks History
// makes (framing, checksum, sequence, a delta applying to the revision
// before it, a payload that decodes to a snapshot of session id). It is
// how a session is copied into this store from another store of the same
// record format (another directory, or a database: pgstore).
//
// The session is created as Create creates one: its log is written into
// a temporary directory under its lease and synced, checked by the
// store's own reader, then the directory is renamed into place without
// replacing anything and the root is synced; a session that fails a
// check is never published. It is left with a free lease whose generation
// is above every generation in the records, and a summary.
//
// Import returns the number of records. Errors: ErrInvalidID, ErrClosed,
// ErrExists, a *sessionstore.CorruptionError for a line that fails its
// checks (nothing is created), ErrSchemaTooNew for a record of a kind
// this program cannot read, lines' own errors, I/O errors. As with
// Create, on error the session either does not exist or exists whole.
func (s *Store) Import(ctx context.Context, id session.SessionID, lines iter.Seq2[[]byte, error]) (n int, err error) {
	if err := s.check(ctx, id); err != nil {
		return 0, err
	}
	opts := sessionstore.AcquireOptions{Label: "import"}
	b, err := s.startSession(ctx, id, opts)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			b.abort(ctx)
			n = 0
		}
	}()

	// Copy the lines, each a single record of the next revision; the
	// sequence and the payloads are checked below, by the reader.
	var last []byte
	var rev, lastGen uint64 // rev: of the line at hand, n+1
	var size int64
	bw := bufio.NewWriterSize(b.log, 1<<20)
	for line, err := range lines {
		if err != nil {
			return 0, fmt.Errorf("jsonlstore: import %s: %w", id, err)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		rev++
		rec, err := s.importLine(id, rev, size, line)
		if err != nil {
			return 0, err
		}
		if _, err := bw.Write(line); err != nil {
			return 0, fmt.Errorf("jsonlstore: import %s: write log: %w", id, err)
		}
		n++
		size += int64(len(line))
		last, lastGen = append(last[:0], line...), rec.Gen
	}
	if n == 0 {
		return 0, fmt.Errorf("jsonlstore: import %s: no records", id)
	}
	if err = bw.Flush(); err == nil {
		err = b.log.Datasync()
	}
	if err != nil {
		return 0, fmt.Errorf("jsonlstore: import %s: write log: %w", id, err)
	}
	snap, err := s.checkImport(ctx, b)
	if err != nil {
		return 0, err
	}

	// Retake the lease above the records' generations, so that the lease
	// record tells the truth about the session. (Acquire would give a
	// higher generation anyway: it reads the log's last one.) Releasing
	// rewrites lease.json, which makes the directory new again for the
	// sweep of leftovers in between.
	if lastGen >= b.lease.Generation() {
		err = b.lease.Release(context.WithoutCancel(ctx))
		b.lease = nil
		if err != nil {
			return 0, fmt.Errorf("jsonlstore: import %s: lease: %w", id, err)
		}
		if b.lease, err = s.leases.acquire(ctx, s.abs(b.tmp), true, s.leaseOptions(opts, lastGen)); err != nil {
			return 0, fmt.Errorf("jsonlstore: import %s: lease: %w", id, err)
		}
	}
	if err = b.publish(ctx); err != nil {
		return 0, err
	}
	// Published: from here on the session exists whole, whatever fails.
	s.writeImportSummary(b, last, size, &snap)
	err = b.lease.Release(context.WithoutCancel(ctx))
	b.lease = nil
	_ = b.log.Close() // written and synced above; nothing is written after
	b.log = nil
	if err != nil {
		return n, fmt.Errorf("jsonlstore: import %s: release: %w", id, err)
	}
	return n, nil
}

// importLine checks that line is one record line of revision rev (it is
// to start at offset off of the log) and returns its envelope.
func (s *Store) importLine(id session.SessionID, rev uint64, off int64, line []byte) (rawRecord, error) {
	corrupt := func(err error) error {
		return &sessionstore.CorruptionError{ID: id, Path: logPath(id), Offset: off, Revision: rev, Err: err}
	}
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return rawRecord{}, corrupt(errNoNewline)
	}
	if bytes.IndexByte(line[:len(line)-1], '\n') >= 0 {
		return rawRecord{}, corrupt(fmt.Errorf("%w: more than one line", errFraming))
	}
	r, err := parseLine(line[:len(line)-1], s.opts.MaxRecordBytes)
	if err != nil {
		return rawRecord{}, corrupt(err)
	}
	if r.Rev != rev {
		return rawRecord{}, corrupt(fmt.Errorf("record %d holds revision %d", rev, r.Rev))
	}
	return r, nil
}

// checkImport reads the log b wrote as History reads a log (the sequence
// rules, deltas, payloads that decode to snapshots of the session) and
// returns the latest snapshot. A failed check is reported at its revision
// and offset in the log it would have been.
func (s *Store) checkImport(ctx context.Context, b *newSession) (sessnap.Snapshot, error) {
	v, err := openView(s.fs, b.tmp+"/"+LogFile, s.opts.MaxRecordBytes)
	if err != nil {
		return sessnap.Snapshot{}, fmt.Errorf("jsonlstore: import %s: %w", b.id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	var latest sessnap.Snapshot
	err = s.scanHistory(ctx, b.id, v, func(rec sessionstore.Record) bool {
		latest = rec.Snapshot
		return true
	})
	var a *anomaly
	if errors.As(err, &a) {
		ce := *a.ce
		ce.Path = logPath(b.id)
		err = &ce
	}
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) && ce.Path == v.name {
		c := *ce
		c.Path = logPath(b.id)
		err = &c
	}
	return latest, err
}

// writeImportSummary writes the summary of a published import whose last
// line is last, in a log of size bytes. The summary is a cache: failing
// to write it fails nothing.
func (s *Store) writeImportSummary(b *newSession, last []byte, size int64, snap *sessnap.Snapshot) {
	r, err := parseLine(last[:len(last)-1], s.opts.MaxRecordBytes)
	if err != nil {
		return
	}
	r.Offset, r.LineLen = size-int64(len(last)), int64(len(last))
	fi, err := b.log.Stat()
	if err != nil {
		return
	}
	dir, err := vfs.Sub(s.fs, sessionDir(b.id))
	if err != nil {
		return
	}
	var sw summaryWriter
	defer sw.close()
	sf := summaryFile{Log: vfs.IdentityOf(fi), LogSize: size, LastOffset: r.Offset, Revision: r.Rev, Summary: projectRecord(&r, snap, size)}
	if err := sw.write(dir, sf); err != nil {
		s.opts.Logger.Warn("jsonlstore: summary not written", "session", b.id, "err", err)
	}
}
