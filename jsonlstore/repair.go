package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// RepairOptions tune Repair. The zero value takes the lease without
// waiting and changes nothing but what normal recovery changes.
type RepairOptions struct {
	// TruncateAtCorruption cuts the log at its first bad record, keeping
	// every removed byte in a forensic file. Without it Repair only
	// reports corruption.
	TruncateAtCorruption bool
	// Salvage rewrites the log keeping every revision that can still be
	// read: exact copies of lines are dropped, damaged records and the
	// deltas that cannot be rebuilt without them are set aside into
	// forensic/, and the revisions they held are recorded in the log as
	// gap records (salvage.go). Revision numbers never change. It takes
	// precedence over TruncateAtCorruption.
	Salvage bool
	// Wait is how long to wait for a held lease; 0 fails at once with a
	// *sessionstore.LeaseHeldError.
	Wait time.Duration
	// Label names the repair in the lease identity (default
	// "sessions-repair").
	Label string
}

// RepairReport says what Repair found and did.
type RepairReport struct {
	ID session.SessionID `json:"id"`
	// Generation is the lease generation the repair held.
	Generation uint64 `json:"generation"`
	// Recovery is what taking the lease found and did: the previous
	// holder's status, an uncommitted tail removed, leftover files swept
	// in the session directory.
	Recovery sessionstore.RecoveryReport `json:"recovery"`
	// Found is the first corruption in the log, nil when there was none.
	Found *sessionstore.Finding `json:"found,omitempty"`
	// Cut is true when the log was cut at CutOffset (TruncateAtCorruption;
	// a lying summary.json alone is moved aside, and nothing is cut).
	Cut       bool  `json:"cut"`
	CutOffset int64 `json:"cut_offset,omitempty"`
	// BytesRemoved counts every byte removed from the log, by the cut and
	// by normal recovery; ForensicFiles hold all of them (paths relative
	// to the store root), and a summary.json moved out of the way.
	BytesRemoved  int64    `json:"bytes_removed"`
	ForensicFiles []string `json:"forensic_files,omitempty"`
	// Salvaged says what a salvage kept and set aside (nil when none ran
	// or nothing needed setting aside).
	Salvaged *SalvageReport `json:"salvaged,omitempty"`
	// Records and Revision describe the log as the repair left it: its
	// number of records and latest revision (records from 1 to Revision
	// are kept).
	Records  int    `json:"records"`
	Revision uint64 `json:"revision"`
	// Swept lists leftover temporary and trash directories at the store
	// root that Repair removed.
	Swept []string `json:"swept,omitempty"`
	// Blobs is what the repair's blob collection removed: blobs no record
	// references, once the log is sound.
	Blobs BlobCollection `json:"blobs,omitzero"`
	// Archives lists the archive segments whose manifest entries an older
	// release's compaction ended too early, and that the repair corrected
	// (archivegap.go).
	Archives []ArchiveFix `json:"archives,omitempty"`
}

// Repair is the explicit, reported way out of corruption for session id.
//
// It takes the session's lease (TryAcquire; or Acquire waiting up to
// opts.Wait), which runs normal recovery: an uncommitted tail is moved to
// forensic/ and truncated. Under the lease it then checks the whole log
// forwards, as Verify does. Corruption found there is reported in Found
// and returned as a *sessionstore.CorruptionError, and nothing else
// changes — unless opts.TruncateAtCorruption is set: then the log is cut
// at its first bad record. Every byte the cut removes is first copied into
// a forensic file (synced, with its directory); summary.json is moved
// into forensic/ too (durably, before the log shrinks, so it can never
// vouch for revisions the log no longer has); then the log is truncated
// and synced. This also frees a session whose damaged tail makes Acquire
// fail. A log with no sound record to keep, damage in the archives, or
// records of a kind this program does not know are not cut.
//
// Repair finally sweeps leftover temporary and trash directories (named
// exactly as the store names them: layout.IsLeftover) at the
// store root older than Options.LeftoverAge whose lease nobody holds.
//
// Errors: ErrNotFound, ErrInvalidID, ErrClosed, *LeaseHeldError, a
// *CorruptionError as above, I/O errors. The report is filled as far as
// Repair got.
func (s *Store) Repair(ctx context.Context, id session.SessionID, opts RepairOptions) (RepairReport, error) {
	rep := RepairReport{ID: id}
	if err := s.checkSession(ctx, id); err != nil {
		return rep, err
	}
	aopts := sessionstore.AcquireOptions{Label: opts.Label}
	if aopts.Label == "" {
		aopts.Label = "sessions-repair"
	}
	sw, err := sessionstore.AcquireWithin(ctx, repairLeases{s, &rep, opts.TruncateAtCorruption, opts.Salvage}, id, aopts, opts.Wait)
	if err != nil {
		var he *sessionstore.LeaseHeldError
		if opts.Wait > 0 && errors.As(err, &he) {
			err = layout.OpErr("repair", id, fmt.Errorf("waited %s: %w", opts.Wait, err))
		}
		var ce *sessionstore.CorruptionError
		if rep.Found == nil && errors.As(err, &ce) {
			f := sessionstore.FindingOf(ce)
			rep.Found = &f
		}
		return rep, err
	}
	w := sw.(*writer)
	if !opts.TruncateAtCorruption && !opts.Salvage {
		// acquireForRepair corrects the archives before cutting or
		// salvaging; here, under the lease, before the log is checked.
		if rep.Archives, err = s.fixArchiveGaps(id); err != nil {
			_ = w.Release(context.WithoutCancel(ctx)) // the error above is the one to report
			return rep, layout.OpErr("repair", id, err)
		}
	}
	rep.Generation = w.Generation()
	rep.Recovery = w.Recovery()
	if r := rep.Recovery; r.TailBytes > 0 {
		rep.BytesRemoved += r.TailBytes
		rep.ForensicFiles = append(rep.ForensicFiles, r.ForensicFile)
	}

	// The whole log, under the lease: Acquire looks only at the tail, so a
	// damaged record in the middle shows up here (or, after a cut, this
	// proves the cut left a sound log).
	c, cerr := s.verifyRecords(ctx, id, false)
	rep.Records = c.records
	rep.Revision = c.last.Through()
	if cerr == nil {
		// A sound log: the blobs no record references go.
		rep.Blobs, cerr = s.collectBlobs(ctx, w)
	}
	rep.Swept = s.repairSweepRoot(ctx)
	rerr := w.Release(context.WithoutCancel(ctx))
	var ce *sessionstore.CorruptionError
	switch {
	case errors.As(cerr, &ce):
		if rep.Found == nil {
			f := sessionstore.FindingOf(ce)
			rep.Found = &f
		}
		return rep, cerr
	case cerr != nil:
		return rep, cerr
	}
	return rep, rerr
}

// repairLeases is the store as Repair takes the lease through it
// (sessionstore.AcquireWithin waits with it): Acquire and TryAcquire as
// the store's, or, when the log is to be cut or salvaged, through
// acquireForRepair; every other method is the store's.
type repairLeases struct {
	*Store
	rep      *RepairReport
	truncate bool
	salvage  bool
}

func (r repairLeases) take(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (sessionstore.Writer, error) {
	if r.truncate || r.salvage {
		w, err := r.acquireForRepair(ctx, id, opts, try, r.salvage, r.rep)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
	return r.acquire(ctx, id, opts, try)
}

func (r repairLeases) Acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return r.take(ctx, id, opts, false)
}

func (r repairLeases) TryAcquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return r.take(ctx, id, opts, true)
}

// acquireForRepair takes session id's lease without the automatic
// recovery that Acquire runs first — which refuses a log whose damage it
// must not touch — and makes the explicit cut (cutAtCorruption). Only then
// does it hand the lease to openWriter, whose normal recovery finds a log
// it accepts.
func (s *Store) acquireForRepair(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try, salvage bool, rep *RepairReport) (*writer, error) {
	lease, marked, err := s.leaseSession(ctx, id, opts, try)
	if err != nil {
		return nil, err
	}
	release := func() { _ = lease.Release(context.WithoutCancel(ctx)) }
	if err := s.checkWritable(id); err != nil {
		release()
		return nil, err
	}
	if rep.Archives, err = s.fixArchiveGaps(id); err != nil {
		release()
		return nil, layout.OpErr("repair", id, err)
	}
	fix := s.cutAtCorruption
	if salvage {
		fix = s.salvageLog
	}
	if err := fix(ctx, id, rep); err != nil {
		release()
		return nil, err
	}
	w, err := s.openWriter(id, lease, marked)
	if err != nil {
		release()
		return nil, err
	}
	return w, nil
}

// cutAtCorruption runs under the lease: it finds the log's first bad
// record by a forward scan (verifyRecords) and cuts the log there. A plain
// uncommitted tail is left to normal recovery. Damage in the archives, or
// at the log's very first record, is not cut: nothing sound would remain.
func (s *Store) cutAtCorruption(ctx context.Context, id session.SessionID, rep *RepairReport) error {
	_, err := s.verifyRecords(ctx, id, false)
	var ce *sessionstore.CorruptionError
	if !errors.As(err, &ce) {
		return err // nil: nothing to cut
	}
	f := sessionstore.FindingOf(ce)
	rep.Found = &f
	var cut int64
	switch ce.Path {
	case layout.LogPath(id):
		cut = ce.Offset
	case layout.SummaryPath(id):
		// summary.json disagrees with a sound log: the log stays whole.
		cut = -1
	default:
		return fmt.Errorf("jsonlstore: repair %s: the damage is in the archives, and repair cuts only the log; "+
			"nothing was changed (keep a copy of the session directory before deleting the session): %w", id, ce)
	}
	if cut == 0 {
		// A log is read from its first record: an empty one holds nothing,
		// whatever the archives hold.
		return fmt.Errorf("jsonlstore: repair %s: the log holds no sound record to keep, so cutting it would leave nothing; "+
			"it is left as it is (copy %s aside before deleting the session): %w", id, layout.LogPath(id), ce)
	}
	v, err := logfile.Open(s.fs, id, s.opts.MaxRecordBytes)
	if err != nil {
		return layout.OpErr("repair", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	if cut < 0 || cut > v.Size {
		cut = v.Size
	}
	if n := v.Size - cut; n > 0 {
		// Every byte removed is kept, durably, before anything is removed.
		name, err := s.saveForensic(id, "repair", cut, v, n)
		if err != nil {
			return layout.OpErr("repair", id, fmt.Errorf("save removed bytes: %w", err))
		}
		rep.ForensicFiles = append(rep.ForensicFiles, name)
	}
	// summary.json goes before the log shrinks, and durably: a summary of
	// the longer log that came back after a crash could, once the log had
	// grown again, vouch for revisions the log no longer has.
	name, err := s.moveSummaryAside(id)
	if err != nil {
		return layout.OpErr("repair", id, fmt.Errorf("move summary aside: %w", err))
	}
	if name != "" {
		rep.ForensicFiles = append(rep.ForensicFiles, name)
	}
	if n := v.Size - cut; n > 0 {
		f, err := s.fs.OpenFile(layout.LogPath(id), os.O_WRONLY, 0)
		if err != nil {
			return layout.OpErr("repair", id, err)
		}
		defer func() { _ = f.Close() }() // Datasync below reports any write error; Close loses nothing after it
		if err := f.Truncate(cut); err != nil {
			return layout.OpErr("repair", id, fmt.Errorf("truncate: %w", err))
		}
		// Durable before the lease goes to anyone who might append.
		if err := f.Datasync(); err != nil {
			return layout.OpErr("repair", id, fmt.Errorf("sync truncate: %w", err))
		}
		rep.BytesRemoved += n
		rep.Cut, rep.CutOffset = true, cut
	}
	s.opts.Logger.Info("jsonlstore: repair cut the log at corruption", "session", id, "offset", cut,
		"bytes", v.Size-cut, "forensic", rep.ForensicFiles, "found", f.Message)
	return nil
}

// moveSummaryAside renames summary.json into forensic/ durably and returns
// its new path, or "" when there was none.
func (s *Store) moveSummaryAside(id session.SessionID) (string, error) {
	src := layout.SummaryPath(id)
	if _, err := s.fs.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	dir := layout.SessionDir(id) + "/" + ForensicDir
	if err := s.fs.Mkdir(dir, layout.DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	dst := dir + "/summary-" + s.opts.Now().UTC().Format("20060102T150405.000000000Z") + ".json"
	// Rename, not RenameNoReplace (same directory only): dst is a new,
	// time-stamped name, and only the lease holder writes into forensic/.
	if err := s.fs.Rename(src, dst); err != nil {
		return "", err
	}
	if err := s.fs.SyncDir(dir); err != nil {
		return "", err
	}
	return dst, s.fs.SyncDir(layout.SessionDir(id))
}

// repairSweepRoot removes leftover temporary and trash directories at the root
// (interrupted creations and deletions) that are older than LeftoverAge
// and whose lease nobody holds — a held one is a creation or deletion in
// progress. It returns what it removed.
func (s *Store) repairSweepRoot(ctx context.Context) []string {
	entries, err := s.fs.ReadDir(".")
	if err != nil {
		return nil
	}
	now := s.opts.Now()
	var swept []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !layout.IsLeftover(name) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < s.opts.LeftoverAge {
			continue
		}
		st, err := s.leases.inspect(ctx, s.root.Abs(name))
		if err != nil || st.State == fslease.Held {
			continue
		}
		if err := s.fs.RemoveAll(name); err != nil {
			s.opts.Logger.Warn("jsonlstore: leftover not swept", "path", name, "err", err)
			continue
		}
		swept = append(swept, name)
	}
	if len(swept) > 0 {
		_ = s.fs.SyncDir(".")
		s.opts.Logger.Info("jsonlstore: swept leftovers", "paths", swept)
	}
	return swept
}
