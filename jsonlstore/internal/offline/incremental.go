package offline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/compact"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// An incremental backup brings a session the destination already holds up
// to date. Its log is a prefix of the source's when the records at both
// ends of the destination's committed log are, byte for byte, the
// source's records at the same offsets: same envelope (revision,
// generation, time, kind), same length, same checksum. A writer writes a
// line once, with its own generation and a time in nanoseconds, so a
// record equal to the source's at the same offset and with the same first
// record is the same history; a log that was compacted, repaired or
// salvaged since has another first record or other bytes at that offset.
// Sizes are never trusted: a log of the same size is checked the same
// way.
//
// The look that finds a session up to date reads only the first and last
// record of each log and takes no lease; anything written happens under
// the destination session's lease lock (taken without waiting, and
// without a lease record or a generation of its own, as retirement takes
// it: a session a live writer holds in the destination is skipped and
// reported), after the same look again. Blobs go first (each under a temporary name, then
// renamed), then archive segments and the manifest, then the log: the
// records that reference a blob are never there before it. Appending
// writes the source's committed lines after the destination's last
// committed record — cutting first whatever uncommitted tail an earlier,
// interrupted backup left there — and syncs; a kill mid-append leaves a
// torn last line, which readers ignore and the next backup cuts. A log
// that is not a prefix is replaced whole (compact.PublishLog: a temporary
// name, synced, renamed); when the destination held revisions the
// source's log no longer has, its old log is first saved in its
// forensic/.

// compareLogs says how the destination's log (dv, last record dlast)
// stands to the source's: up to date, a prefix the source extends
// (append), or neither (replace, with the reason).
func (src *backupSource) compareLogs(dv *logfile.View, dlast *record.Rec) (upToDate, prefix bool, why string, err error) {
	sfirst, err := src.v.Back.At(0)
	if err != nil {
		return false, false, "", err
	}
	dfirst, err := dv.Back.At(0)
	if err != nil {
		return false, false, "its log in the destination is damaged", nil //nolint:nilerr // a damaged copy is replaced whole, not an error
	}
	if same, err := sameRecord(src.v.F, sfirst, dv.F, dfirst); err != nil || !same {
		if err == nil && sfirst.Rev > dfirst.Rev {
			why = "compacted since the last backup"
		} else if err == nil {
			why = "repaired or rewritten since the last backup"
		}
		return false, false, why, err
	}
	if dlast.End() > src.last.End() {
		return false, false, "the destination's log is longer than the source's", nil
	}
	at, err := src.v.Back.At(dlast.Offset)
	if err != nil {
		// No record of the source starts there: another history.
		return false, false, "repaired or rewritten since the last backup", nil //nolint:nilerr // the answer, not a failure
	}
	same, err := sameRecord(src.v.F, at, dv.F, dlast)
	switch {
	case err != nil:
		return false, false, "", err
	case !same:
		return false, false, "repaired or rewritten since the last backup", nil
	}
	return dlast.End() == src.last.End(), true, "", nil
}

// sameRecord reports whether records a (in fa) and b (in fb) are the
// same line: same envelope, length and checksum (both were parsed, so
// each checksum matches its line).
func sameRecord(fa vfs.File, a *record.Rec, fb vfs.File, b *record.Rec) (bool, error) {
	if a.Meta != b.Meta || a.LineLen != b.LineLen || a.LineLen < 12 {
		return false, nil
	}
	ca, err := lineCRC(fa, a)
	if err != nil {
		return false, err
	}
	cb, err := lineCRC(fb, b)
	return err == nil && ca == cb, err
}

// lineCRC reads the 8 hex digits of r's checksum: its line ends with
// `"crc":"xxxxxxxx"}` and a newline.
func lineCRC(f vfs.File, r *record.Rec) ([8]byte, error) {
	var b [8]byte
	_, err := f.ReadAt(b[:], r.End()-11)
	return b, err
}

// update brings session src.id of dst up to date. why is set, and nothing
// done, when a live writer holds the session in dst. A zero Action in sb
// means dst held it whole already.
func (src *backupSource) update(ctx context.Context, dst *Store) (sb maintenance.SessionBackup, why string, err error) {
	id := src.id
	sb = maintenance.SessionBackup{ID: id, Revision: src.last.Rev, LogBytes: src.last.End(), Segments: len(src.segs)}
	if ok, _ := src.upToDate(dst); ok {
		return sb, "", nil
	}
	// The lease lock alone, as retirement takes it: no live holder
	// writes the session while it is held, and no lease record is
	// written (two of them would cost more than a small append). A
	// writer that acquires the session later takes a generation above
	// every one in the log (the store's log floor), the source's
	// generations included.
	unlock, held, err := dst.host.LockLease(id)
	switch {
	case err != nil:
		return sb, "", err
	case held:
		return sb, "held by a live writer in the destination", nil
	}
	defer unlock()
	if err := dst.host.CheckWritable(id); err != nil {
		return sb, "", err
	}
	// As a holder does before it changes the log: no catalog of dst is
	// believed about the session without a look at its log.
	dst.host.MarkCatalog(id, src.last.Gen)
	dv, err := logfile.Open(dst.root.FS, id, dst.root.MaxRecordBytes)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return sb, "", err
	}
	if dv != nil {
		defer func() { _ = dv.Close() }() // read-only
	}
	var dlast *record.Rec
	if dv != nil {
		dlast, _, err = dv.Back.Last()
		if err != nil {
			dlast = nil // a damaged copy: replaced whole
		}
	}
	upToDate, prefix, reason := false, false, "its log in the destination is missing or damaged"
	if dlast != nil {
		if upToDate, prefix, reason, err = src.compareLogs(dv, dlast); err != nil {
			return sb, "", err
		}
	}
	if upToDate {
		return sb, "", nil
	}
	// The records about to land were written under the source's cap:
	// the destination records at least that cap first (made durable
	// before them), so a reader of the copy whose own cap is smaller
	// reads them as the source's readers do.
	if err := src.recordCap(dst); err != nil {
		return sb, "", err
	}
	have, err := blobNames(dst.root.FS, id)
	if err != nil {
		return sb, "", err
	}
	if err := src.copyBlobs(dst.root.FS, layout.SessionDir(id), have, &sb); err != nil {
		return sb, "", err
	}
	if prefix {
		sb.Action = maintenance.BackupAppended
		err = src.appendTo(dst.root.FS, dlast.End(), dv.Size, &sb)
		return sb, "", err
	}
	sb.Action, sb.Reason = maintenance.BackupReplaced, reason
	if dv != nil && dlast != nil && !src.holds(dv, dlast) {
		if sb.Forensic, err = dst.host.SaveForensic(id, "before-backup", 0, dv, dv.Size); err != nil {
			return sb, "", err
		}
	}
	if err := src.copyArchives(dst.root.FS, &sb); err != nil {
		return sb, "", err
	}
	n, err := compact.PublishLog(dst.root.FS, id, "compact", func(w io.Writer) error {
		_, err := io.Copy(w, io.NewSectionReader(src.v.F, 0, src.last.End()))
		return err
	})
	sb.BytesCopied += n
	return sb, "", err
}

// recordCap raises the cap dst's copy of the session records to the
// source's recorded cap when it is less (layout.Root.RecordCapAtLeast).
func (src *backupSource) recordCap(dst *Store) error {
	dir := layout.SessionDir(src.id)
	// A settings.json that cannot be read records nothing (layout.ReadCap):
	// the source's records fit its readers' own caps.
	want, _ := layout.RecordedCap(src.fs, dir) // 0 with its error
	if want == 0 {
		return nil
	}
	return dst.root.RecordCapAtLeast(dir, want, true)
}

// upToDate is update's look without the lease: dst's committed log is
// the source's, whole.
func (src *backupSource) upToDate(dst *Store) (bool, error) {
	dv, err := logfile.Open(dst.root.FS, src.id, dst.root.MaxRecordBytes)
	if err != nil {
		return false, err
	}
	defer func() { _ = dv.Close() }() // read-only
	if dv.Size < src.last.End() {
		return false, nil // shorter: something to append (or to replace)
	}
	dlast, _, err := dv.Back.Last()
	if err != nil || dlast == nil {
		return false, err
	}
	ok, _, _, err := src.compareLogs(dv, dlast)
	return ok, err
}

// holds reports whether the source still has record r of the
// destination's old log: below the source log's first revision (archived
// by a compaction) or the same line in the source's log.
func (src *backupSource) holds(dv *logfile.View, r *record.Rec) bool {
	first, ok := logfile.FirstRev(src.v)
	if !ok {
		return false
	}
	if r.Through() < first {
		return true
	}
	for at := src.last; at != nil; {
		if at.Rev == r.Rev {
			same, err := sameRecord(src.v.F, at, dv.F, r)
			return err == nil && same
		}
		if at.Rev < r.Rev {
			return false
		}
		var err error
		if at, err = src.v.Back.Before(at); err != nil {
			return false
		}
	}
	return false
}

// appendTo appends the source's committed bytes past off to dst's log of
// the session (whose size is size: bytes past off are an uncommitted tail,
// cut first) and syncs it.
func (src *backupSource) appendTo(dst vfs.FS, off, size int64, sb *maintenance.SessionBackup) error {
	f, err := dst.OpenFile(layout.LogPath(src.id), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if size > off {
		if err := f.Truncate(off); err != nil {
			_ = f.Close()
			return err
		}
	}
	n, err := io.Copy(&offsetWriter{f: f, off: off}, io.NewSectionReader(src.v.F, off, src.last.End()-off))
	sb.BytesCopied += n
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// offsetWriter writes to f from off on.
type offsetWriter struct {
	f   vfs.File
	off int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}

// copyArchives copies into dst the source's segments it lacks (each under
// a temporary name, then renamed: segments are immutable) and then the
// manifest, before the log that needs them replaces the old one.
func (src *backupSource) copyArchives(dst vfs.FS, sb *maintenance.SessionBackup) error {
	if len(src.segs) == 0 {
		return nil
	}
	dir := archive.Dir(src.id)
	made := false
	if err := dst.Mkdir(dir, layout.DirPerm); err == nil {
		made = true
	} else if !errors.Is(err, os.ErrExist) {
		return err
	}
	for i, seg := range src.segs {
		if fi, err := dst.Lstat(dir + "/" + seg.File); err == nil && fi.Size() == seg.ZstBytes && archive.VerifySegment(dst, dir+"/"+seg.File, seg) == nil {
			continue
		}
		tmp := dir + "/.segment-" + layout.RandomSuffix() + layout.TmpSuffix // as archive.NewWriter names it
		n, err := copyFile(dst, tmp, io.NewSectionReader(src.segFiles[i], 0, seg.ZstBytes))
		if err == nil {
			err = dst.Rename(tmp, dir+"/"+seg.File)
		}
		if err != nil {
			_ = dst.Remove(tmp)
			return err
		}
		sb.ArchiveBytes += n
		sb.BytesCopied += n
	}
	b, err := record.Frame(archive.Manifest{Version: archive.ManifestVersion, Segments: src.segs})
	if err != nil {
		return err
	}
	if old, err := readAll(dst, dir+"/"+archive.ManifestFile); err != nil || !bytes.Equal(old, b) {
		if err := archive.WriteManifest(dst, src.id, archive.Manifest{Version: archive.ManifestVersion, Segments: src.segs}); err != nil {
			return fmt.Errorf("write manifest: %w", err)
		}
		sb.BytesCopied += int64(len(b))
	}
	if made {
		// archive/ itself is durable in the session's directory before
		// the log that needs it: a power loss must not keep the log's
		// rename and lose the directory.
		return dst.SyncDir(layout.SessionDir(src.id))
	}
	return nil
}

// blobNames is the set of session id's blob files in fsys.
func blobNames(fsys vfs.FS, id session.SessionID) (map[string]bool, error) {
	names, err := blobfile.Names(fsys, id)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	return have, nil
}

// readAll reads a small file of fsys whole.
func readAll(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, layout.RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	return io.ReadAll(io.LimitReader(f, archive.MaxManifestSize+1))
}
