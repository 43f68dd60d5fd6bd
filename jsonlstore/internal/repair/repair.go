package repair

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Repair is jsonlstore's Store.Repair, whose doc says what it promises:
// it takes session id's lease (repairing under it first when opts asks to
// cut or salvage), checks the whole log under it, collects the blobs no
// record references and sweeps the root's leftovers. The report is
// filled as far as Repair got.
func (s *Store) Repair(ctx context.Context, id session.SessionID, opts maintenance.RepairOptions) (maintenance.RepairReport, error) {
	rep := maintenance.RepairReport{ID: id}
	if err := logfile.Gate(s.host.Check).Exists(ctx, s.root, id); err != nil {
		return rep, err
	}
	aopts := sessionstore.AcquireOptions{Label: opts.Label}
	if aopts.Label == "" {
		aopts.Label = "sessions-repair"
	}
	sw, err := sessionstore.AcquireWithin(ctx, repairLeases{s.host, s, &rep, opts.TruncateAtCorruption, opts.Salvage}, id, aopts, opts.Wait)
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
	w, ok := sw.(Writer)
	if !ok {
		_ = sw.Release(context.WithoutCancel(ctx))
		return rep, layout.OpErr("repair", id, fmt.Errorf("the store's writer %T cannot forget blobs", sw))
	}
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
	c, cerr := s.verifier().Records(ctx, id, false)
	rep.Records = c.Records
	rep.Revision = c.Last.Through()
	if cerr == nil {
		// A sound log: the blobs no record references go.
		rep.Blobs, cerr = s.blobs().Collect(ctx, w.ID(), w.ForgetBlob)
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
// acquireForRepair; every other method is the store's (Host's).
type repairLeases struct {
	Host
	s        *Store
	rep      *maintenance.RepairReport
	truncate bool
	salvage  bool
}

func (r repairLeases) take(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (sessionstore.Writer, error) {
	if r.truncate || r.salvage {
		w, err := r.s.acquireForRepair(ctx, id, opts, try, r.salvage, r.rep)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
	if try {
		return r.Host.TryAcquire(ctx, id, opts)
	}
	return r.Host.Acquire(ctx, id, opts)
}

func (r repairLeases) Acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return r.take(ctx, id, opts, false)
}

func (r repairLeases) TryAcquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return r.take(ctx, id, opts, true)
}

// acquireForRepair takes session id's lease without the automatic
// recovery that Acquire runs first — which refuses a log whose damage it
// must not touch — and makes the explicit cut (cutAtCorruption) or the
// salvage (salvageLog). Only then does it hand the lease to OpenWriter,
// whose normal recovery finds a log it accepts.
func (s *Store) acquireForRepair(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try, salvage bool, rep *maintenance.RepairReport) (Writer, error) {
	lease, err := s.host.TakeLease(ctx, id, opts, try)
	if err != nil {
		return nil, err
	}
	release := func() { _ = lease.Release(context.WithoutCancel(ctx)) }
	if err := s.host.CheckWritable(id); err != nil {
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
	w, err := s.host.OpenWriter(id, lease)
	if err != nil {
		release()
		return nil, err
	}
	return w, nil
}

// cutAtCorruption runs under the lease: it finds the log's first bad
// record by a forward scan (verify.Checker.Records) and cuts the log there. A plain
// uncommitted tail is left to normal recovery. Damage in the archives, or
// at the log's very first record, is not cut: nothing sound would remain.
func (s *Store) cutAtCorruption(ctx context.Context, id session.SessionID, rep *maintenance.RepairReport) error {
	_, err := s.verifier().Records(ctx, id, false)
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
	v, err := logfile.Open(s.root.FS, id, s.root.MaxRecordBytes)
	if err != nil {
		return layout.OpErr("repair", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	if cut < 0 || cut > v.Size {
		cut = v.Size
	}
	if n := v.Size - cut; n > 0 {
		// Every byte removed is kept, durably, before anything is removed.
		name, err := s.host.SaveForensic(id, "repair", cut, v, n)
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
		f, err := s.root.FS.OpenFile(layout.LogPath(id), os.O_WRONLY, 0)
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
	s.root.Logger.Info("jsonlstore: repair cut the log at corruption", "session", id, "offset", cut,
		"bytes", v.Size-cut, "forensic", rep.ForensicFiles, "found", f.Message)
	return nil
}

// moveSummaryAside renames summary.json into forensic/ durably and returns
// its new path, or "" when there was none.
func (s *Store) moveSummaryAside(id session.SessionID) (string, error) {
	src := layout.SummaryPath(id)
	if _, err := s.root.FS.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	dir := layout.SessionDir(id) + "/" + layout.ForensicDir
	if err := s.root.FS.Mkdir(dir, layout.DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	dst := dir + "/summary-" + s.root.Now().UTC().Format("20060102T150405.000000000Z") + ".json"
	// Rename, not RenameNoReplace (same directory only): dst is a new,
	// time-stamped name, and only the lease holder writes into forensic/.
	if err := s.root.FS.Rename(src, dst); err != nil {
		return "", err
	}
	if err := s.root.FS.SyncDir(dir); err != nil {
		return "", err
	}
	return dst, s.root.FS.SyncDir(layout.SessionDir(id))
}

// repairSweepRoot removes leftover temporary and trash directories at the root
// (interrupted creations and deletions) that are older than LeftoverAge
// and whose lease nobody holds — a held one is a creation or deletion in
// progress. It returns what it removed.
func (s *Store) repairSweepRoot(ctx context.Context) []string {
	entries, err := s.root.FS.ReadDir(".")
	if err != nil {
		return nil
	}
	now := s.root.Now()
	var swept []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !layout.IsLeftover(name) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < s.root.LeftoverAge {
			continue
		}
		st, err := s.host.InspectLease(ctx, s.root.Abs(name))
		if err != nil || st.State == fslease.Held {
			continue
		}
		if err := s.root.FS.RemoveAll(name); err != nil {
			s.root.Logger.Warn("jsonlstore: leftover not swept", "path", name, "err", err)
			continue
		}
		swept = append(swept, name)
	}
	if len(swept) > 0 {
		_ = s.root.FS.SyncDir(".")
		s.root.Logger.Info("jsonlstore: swept leftovers", "paths", swept)
	}
	return swept
}
