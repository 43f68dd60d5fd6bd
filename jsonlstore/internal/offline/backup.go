package offline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// A backup copies each session consistently even while writers append and
// compactions run: it opens a view of the log first (a compaction that
// replaces the log later does not affect the open file), copies only the
// log's committed prefix (bytes up to the end of its last valid record,
// which never change), then reads the manifest — which, being written
// before any log replacement, covers every revision below the view's first
// — and copies the segments it needs (published segments are immutable).
// Lease, summary and forensic files are not copied: the copy's first holder
// starts a fresh lease above every generation in the log. Each session is
// built in a temporary directory of the destination, synced, and published
// with RENAME_NOREPLACE, many at a time (batch.go); each is checked
// before it is published (copycheck.go: a copy that does not check is
// never published), and a session brought up to date in place is
// verified after it was written.

// ForSessions runs fn for each session of ids, or for every session of
// the store when ids is empty, adding the sessions it cannot read to bad
// (jsonlstore's listing of sessions); all says whether ids was empty.
type ForSessions func(ids []session.SessionID, fn func(id session.SessionID) error, bad *[]summary.Unreadable) (all bool, err error)

// Backup copies sessions ids (every session forEach lists when none) into
// the store dst, filling in rep, and returns the sessions it wrote, which
// it verified (rep.Verify). A session dst does not hold is copied whole
// (stage, checked as it is copied, before it is published); one it holds is
// brought up to date (update): the bytes past
// what dst holds are appended when dst's log is a prefix of the source's,
// and the session is copied whole otherwise. The copy is consistent: every
// revision of a session at the moment its log was opened, from revision
// 1, each exactly once. A session that cannot be read is reported in rep's
// Unreadable list and the others are copied. With opts.Delete, the
// sessions of dst the source no longer has are deleted (only when ids is
// empty).
func (s *Store) Backup(ctx context.Context, dst *Store, ids []session.SessionID, forEach ForSessions, opts maintenance.BackupOptions, rep *maintenance.BackupReport) (_ []session.SessionID, err error) {
	var copied, updated []session.SessionID
	b := newBatch(dst, rep)
	defer b.abort() // what an error left staged
	seen := map[session.SessionID]bool{}
	total, done := len(ids), 0
	if total == 0 && opts.Progress != nil {
		if all, err := layout.SessionIDs(s.root.FS); err == nil {
			total = len(all)
		}
	}
	all, err := forEach(ids, func(id session.SessionID) error {
		seen[id] = true
		defer func() {
			if done++; opts.Progress != nil {
				opts.Progress(done, max(total, done))
			}
		}()
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, lerr := dst.root.FS.Lstat(layout.SessionDir(id)); lerr != nil {
			// A new session: opened, copied and checked on another
			// goroutine while the next ones are (batch.stage).
			if b.stage(func() *stageJob { return s.stageOne(ctx, dst, id, len(ids) == 0) }) {
				return b.flush()
			}
			return b.err()
		}
		src, err := s.openBackupSource(id)
		if err != nil {
			why, bad, stop := sourceErr(err, len(ids) == 0)
			b.report(&stageJob{id: id, skip: why, bad: bad})
			return stop
		}
		defer src.close()
		sb, why, err := src.update(ctx, dst)
		switch {
		case why != "":
			skip(rep, id, why)
			return nil
		case err != nil:
			return layout.OpErr("backup", id, err) // writing the copy failed: the backup stops
		case sb.Action == "":
			rep.Unchanged++
			return nil
		}
		updated = append(updated, id)
		rep.BytesCopied += sb.BytesCopied
		rep.Sessions = append(rep.Sessions, sb)
		copied = append(copied, id)
		return nil
	}, nil)
	if err == nil {
		err = b.finish()
	}
	copied = append(copied, b.copied...)
	if err == nil {
		err = dst.verifyWritten(ctx, updated, rep)
	}
	if err != nil || !all || !opts.Delete {
		return copied, err
	}
	return copied, dst.deleteUnseen(ctx, seen, rep)
}

// skip records in rep that session id was not copied, and why.
func skip(rep *maintenance.BackupReport, id session.SessionID, why string) {
	if rep.Skipped == nil {
		rep.Skipped = map[string]string{}
	}
	rep.Skipped[string(id)] = why
}

// sourceErr sorts an error opening a session's source (openBackupSource):
// a session skipped (why), one that cannot be read (bad: reported, and
// the others go on), or an error that stops the backup (stop); none of
// them for what is not a session, beside the sessions, when listed (all
// the store's sessions are backed up).
func sourceErr(err error, listed bool) (why string, bad, stop error) {
	switch {
	case errors.Is(err, logfile.ErrNotSession) && listed:
		return "", nil, nil // a directory beside the sessions, not one of them
	case errors.Is(err, logfile.ErrNotSession):
		return "not a session: it holds no " + layout.LogFile, nil, nil
	case errors.Is(err, sessionstore.ErrNotFound):
		return "deleted while backing up", nil, nil
	case !logfile.EndsStoreWide(err):
		return "", err, nil
	}
	return "", nil, err
}

// stageOne opens session id's source and stages its copy in dst (stage).
func (s *Store) stageOne(ctx context.Context, dst *Store, id session.SessionID, listed bool) *stageJob {
	j := &stageJob{id: id}
	src, err := s.openBackupSource(id)
	if err != nil {
		j.skip, j.bad, j.err = sourceErr(err, listed)
		return j
	}
	defer src.close()
	if j.st, j.sb, err = src.stage(ctx, dst); err != nil {
		j.st, j.err = nil, layout.OpErr("backup", id, err) // writing the copy failed: the backup stops
	}
	return j
}

// deleteUnseen deletes the sessions of s (a backup's destination) that
// are not in seen (the source's), each under its lease (the store's
// Delete); one held by a live writer is skipped and reported.
func (s *Store) deleteUnseen(ctx context.Context, seen map[session.SessionID]bool, rep *maintenance.BackupReport) error {
	ids, err := layout.SessionIDs(s.root.FS)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		w, err := s.host.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "sessions-backup"})
		if err == nil {
			err = w.Delete(ctx)
		}
		var he *sessionstore.LeaseHeldError
		switch {
		case errors.As(err, &he):
			skip(rep, id, "not deleted: held by a live writer in the destination")
		case errors.Is(err, sessionstore.ErrNotFound):
		case err != nil:
			return layout.OpErr("backup", id, err)
		default:
			rep.Deleted = append(rep.Deleted, id)
		}
	}
	return nil
}

// CheckBackupDest refuses (layout.ErrBackupInsideStore) a destination
// that is the store's root (osRoot, opened at dir; nil for a simulated
// file system) or lies inside it: the copy would land among the sessions
// it copies. Every existing ancestor of dest is compared with the root by
// identity, so a symlink or another path to the root is caught too.
func CheckBackupDest(osRoot *os.Root, dir, dest string) error {
	if osRoot == nil {
		return nil // a simulated file system: nothing on disk to land in
	}
	abs, err := filepath.Abs(dest)
	if err != nil {
		return err
	}
	root, err := osRoot.Stat(".")
	if err != nil {
		return layout.OpErr("backup", "", err)
	}
	for p := abs; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, root) {
			return fmt.Errorf("%w: %s is inside %s; choose a directory outside the store", layout.ErrBackupInsideStore, dest, dir)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// backupSource is what a backup of one session reads, all opened before
// anything is written: a view of the log (a compaction that replaces the
// log later does not affect it), its last record, and the archive segments
// that hold the revisions below the log's first.
type backupSource struct {
	s  *Store
	id session.SessionID
	// fs is the source's file system with the session's directory opened
	// once (vfs.Within): every file of the session is read relative to it.
	fs       vfs.SubFS
	v        *logfile.View
	last     *record.Rec
	segs     []archive.Segment
	segFiles []vfs.File
}

// openBackupSource opens what a backup of session id reads. Its errors are
// about the source session alone.
func (s *Store) openBackupSource(id session.SessionID) (_ *backupSource, err error) {
	dir, err := vfs.Within(s.root.FS, layout.SessionDir(id), layout.SessionDir(id))
	if err != nil {
		if xerr := s.root.Exists(id); xerr != nil {
			return nil, xerr // gone, a symlink, not a directory
		}
		return nil, layout.OpErr("backup", id, err)
	}
	v, err := logfile.Open(dir, id, s.root.MaxRecordBytes)
	if err != nil {
		_ = dir.Close() // read-only
		if lerr := logfile.LogErr(s.root, id, err); lerr != nil {
			return nil, lerr
		}
		return nil, layout.OpErr("backup", id, err)
	}
	src := &backupSource{s: s, id: id, fs: dir, v: v}
	defer func() {
		if err != nil {
			src.close()
		}
	}()
	if src.last, _, err = logfile.Latest(dir, id, v); err != nil {
		return nil, err
	}
	first, ok := logfile.FirstRev(v)
	if !ok {
		return nil, &sessionstore.CorruptionError{ID: id, Path: v.Name, Err: errors.New("the log's first record is unreadable")}
	}
	if first > 1 {
		m, err := archive.ReadManifest(dir, id)
		if err != nil {
			return nil, archive.Corruption(id, archive.ManifestFile, 0, err)
		}
		if src.segs, err = m.Below(first); err != nil {
			return nil, archive.Corruption(id, archive.ManifestFile, 0, err)
		}
	}
	for _, seg := range src.segs {
		f, err := dir.OpenFile(archive.Dir(id)+"/"+seg.File, layout.RDONLY, 0)
		if err != nil {
			return nil, archive.Corruption(id, seg.File, seg.First, err)
		}
		src.segFiles = append(src.segFiles, f)
	}
	return src, nil
}

func (src *backupSource) close() {
	_ = src.v.Close() // read-only, as the segments and the directory below
	for _, f := range src.segFiles {
		_ = f.Close()
	}
	_ = src.fs.Close()
}

// copyInto copies the session into dst on its own: staged in a
// temporary directory, checked as a full backup checks it (stage;
// a copy that differs from what was read is removed, and its error names
// the file and why), made durable (SyncAll), published with
// RENAME_NOREPLACE and the root synced. A full backup stages many
// sessions before it syncs and publishes them together (batch).
func (src *backupSource) copyInto(ctx context.Context, to *Store) (maintenance.SessionBackup, error) {
	dst := to.root.FS
	st, sb, err := src.stage(ctx, to)
	if err != nil {
		return sb, err
	}
	if VerifyStaged {
		err := st.err
		if sr := st.sr; err == nil && !sr.OK() && !st.faithful {
			err = fmt.Errorf("%w: session %s: its copy in the destination does not check: %s: %s",
				sessionstore.ErrCorrupt, src.id, sr.Problems[0].File, sr.Problems[0].Message)
		}
		if err != nil {
			_ = dst.RemoveAll(st.tmp)
			return sb, err
		}
	}
	if err := dst.SyncAll(st.names); err != nil {
		_ = dst.RemoveAll(st.tmp)
		return sb, err
	}
	if err := st.publish(dst); err != nil {
		return sb, err
	}
	return sb, dst.SyncDir(".")
}

// stage copies the session into a new temporary directory of to,
// without syncing anything: settings.json, the archive segments below
// the log and a manifest listing them, the log's committed prefix, every
// blob. Unless VerifyStaged is off, it checks the copy as it writes it
// (copycheck.go) and leaves what it found in the staged copy's sr and
// faithful. On an error it leaves nothing.
func (src *backupSource) stage(ctx context.Context, to *Store) (_ *staged, sb maintenance.SessionBackup, err error) {
	id, dst := src.id, to.root.FS
	sb = maintenance.SessionBackup{ID: id, Action: maintenance.BackupNew}
	if _, err := dst.Lstat(layout.SessionDir(id)); err == nil {
		return nil, sb, fmt.Errorf("%w: session %s in the destination", sessionstore.ErrExists, id)
	}
	st := &staged{id: id, tmp: layout.TmpDirPrefix + string(id) + "-" + layout.RandomSuffix(),
		sr: sessionstore.SessionVerifyReport{ID: id}}
	// The staged directory is opened once and its files are made by name
	// relative to it (vfs.NewDir).
	top, err := vfs.MakeDir(dst, st.tmp, layout.DirPerm)
	if err != nil {
		return nil, sb, err
	}
	c := &stagedCopy{st: st, verify: VerifyStaged}
	defer func() {
		if cerr := c.close(); err == nil && cerr != nil {
			err = cerr
		}
		if cerr := top.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			_ = dst.RemoveAll(st.tmp)
		}
	}()
	st.names = append(st.names, st.tmp)

	// settings.json first: the record cap the records were written under,
	// which a reader of the copy needs, and which the copy's records are
	// checked with (a writer records it before its first record there,
	// and only ever raises it: what is there now covers the records
	// copied).
	var settings []byte
	if f, err := src.fs.OpenFile(layout.SessionDir(id)+"/"+layout.SettingsFile, layout.RDONLY, 0); err == nil {
		n, err := c.copyFile(top, "", layout.SettingsFile, f, func(p []byte) {
			settings = append(settings, p[:min(len(p), layout.SettingsMax-len(settings))]...)
		})
		_ = f.Close() // read-only
		if err != nil {
			return nil, sb, err
		}
		sb.BytesCopied += n
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, sb, err
	}
	if c.damaged != nil {
		return st, sb, nil // refused: nothing more to copy
	}

	// The history: the segments and the log, read once, through the
	// copy (each byte read is written into the copy), and checked as
	// read.
	var archiveDir vfs.NewDir
	if len(src.segs) > 0 {
		if archiveDir, err = c.mkdir(top, layout.ArchiveDir); err != nil {
			return nil, sb, err
		}
	}
	segs := make([]*copier, len(src.segs))
	for i, seg := range src.segs {
		if segs[i], err = c.create(archiveDir, layout.ArchiveDir, seg.File, src.segFiles[i], nil); err != nil {
			return nil, sb, err
		}
		sb.ArchiveBytes += seg.ZstBytes
	}
	log, err := c.create(top, "", layout.LogFile, io.NewSectionReader(src.v.F, 0, src.last.End()), nil)
	if err != nil {
		return nil, sb, err
	}
	st.logBytes, st.rev = src.last.End(), src.last.Rev
	sb.LogBytes, sb.Revision, sb.Segments = src.last.End(), src.last.Rev, len(src.segs)
	sb.BytesCopied += sb.LogBytes + sb.ArchiveBytes
	var h *history
	if c.verify {
		recorded, _ := layout.ParseCap(settings) // 0 with its error: what layout.ReadCap reads the copy with
		h = checkHistory(ctx, id, record.SessionCap(to.root.MaxRecordBytes, int64(recorded)), src.segs, segs, log, st.logBytes)
	}
	for _, cp := range append(segs, log) {
		if _, err := c.finish(cp, nil); err != nil {
			return nil, sb, err
		}
	}
	if c.damaged != nil {
		return st, sb, nil
	}
	if h != nil {
		if err := h.report(st, log.n); err != nil {
			return nil, sb, layout.OpErr("backup", id, err)
		}
	}
	if archiveDir != nil {
		b, err := record.Frame(archive.Manifest{Version: archive.ManifestVersion, Segments: src.segs})
		if err != nil {
			return nil, sb, err
		}
		if _, err := c.copyFile(archiveDir, layout.ArchiveDir, archive.ManifestFile, bytes.NewReader(b), nil); err != nil {
			return nil, sb, err
		}
		sb.BytesCopied += int64(len(b))
	}

	// The blobs: every one there, each whole (a blob under its name was
	// synced before it got it); those the copied records reference were
	// there before the log was opened. Unpublished, they are written
	// under their own names.
	names, err := blobfile.Names(src.fs, src.id)
	if err != nil {
		return nil, sb, err
	}
	refs := &copyRefs{}
	if h != nil {
		refs = &h.refs
	}
	if len(names) > 0 {
		if err := src.stageBlobs(c, top, names, refs, &sb); err != nil || c.damaged != nil {
			return st, sb, err
		}
	} else if len(refs.claims) > 0 {
		refs.failed = true // no blob is there: Verify decides
	}
	st.bytes = sb.BytesCopied
	if h != nil {
		if err := to.checkRefs(ctx, st, refs); err != nil {
			st.err = err
		}
	}
	return st, sb, nil
}

// stageBlobs copies the blob files names into directory blobs/ of the
// staged copy c, each checked against the claim refs holds of it, when
// it is the file of a blob referenced (blobfile.FileFor), as read back:
// first the pages the records reference, whose messages reference more
// (pages among them), then the rest, in name order.
func (src *backupSource) stageBlobs(c *stagedCopy, top vfs.NewDir, names []string, refs *copyRefs, sb *maintenance.SessionBackup) error {
	d, err := c.mkdir(top, layout.BlobDir)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(names))
	for _, name := range names {
		have[name] = true
	}
	has := func(name string) bool { return have[name] }
	copied := map[string]bool{}
	copyBlob := func(name string, check func(f vfs.File, size int64)) error {
		f, err := src.fs.OpenFile(blobfile.Dir(src.id)+"/"+name, layout.RDONLY, 0)
		if err != nil {
			return err
		}
		n, err := c.copyChecked(d, layout.BlobDir, name, f, nil, check)
		_ = f.Close() // read-only
		if err == nil {
			copied[name] = true
			sb.Blobs++
			sb.BytesCopied += n
		}
		return err
	}
	for len(refs.pages) > 0 && c.damaged == nil {
		hash := refs.pages[len(refs.pages)-1]
		refs.pages = refs.pages[:len(refs.pages)-1]
		name, ok := blobfile.FileFor(has, hash)
		if !ok {
			refs.failed = true // missing: Verify decides
			continue
		}
		if err := copyBlob(name, func(f vfs.File, size int64) { refs.page(src.id, hash, name, f, size) }); err != nil {
			return err
		}
	}
	// Every other blob referenced is there (FileFor), and is checked as it
	// is copied.
	check := map[string]string{} // file name -> hash
	for hash := range refs.claims {
		switch name, ok := blobfile.FileFor(has, hash); {
		case !ok:
			refs.failed = true // missing: Verify decides
		case !copied[name]:
			check[name] = hash
		}
	}
	for _, name := range names {
		if copied[name] || c.damaged != nil {
			continue
		}
		var fn func(f vfs.File, size int64)
		if hash, ok := check[name]; ok {
			fn = func(f vfs.File, size int64) { refs.blob(src.id, hash, name, f, size) }
		}
		if err := copyBlob(name, fn); err != nil {
			return err
		}
	}
	return nil
}

// copyBlobs copies into directory dir of dst (a published session's) the
// source's blobs and pages that have is missing, each whole, and syncs
// dir's blobs/ (and dir, when it made blobs/). A blob under its name was synced before
// it got it, and those the copied records reference were there before
// the log was opened.
func (src *backupSource) copyBlobs(dst vfs.FS, dir string, have map[string]bool, sb *maintenance.SessionBackup) error {
	names, err := blobfile.Names(src.fs, src.id)
	if err != nil {
		return err
	}
	names = slices.DeleteFunc(names, func(name string) bool { return have[name] })
	if len(names) == 0 {
		return nil
	}
	made := false
	if err := dst.Mkdir(dir+"/"+layout.BlobDir, layout.DirPerm); err == nil {
		made = true
	} else if !errors.Is(err, fs.ErrExist) {
		return err
	}
	for _, name := range names {
		f, err := src.fs.OpenFile(blobfile.Dir(src.id)+"/"+name, layout.RDONLY, 0)
		if err != nil {
			return err
		}
		// A blob is published under its name only whole: written under a
		// temporary name of blobs/ (which the holder's sweep removes), then
		// renamed.
		tmp := dir + "/" + layout.BlobDir + "/" + blobfile.TmpPrefix + layout.RandomSuffix() + layout.TmpSuffix
		n, err := copyFile(dst, tmp, f)
		_ = f.Close() // read-only
		if err == nil {
			err = dst.Rename(tmp, dir+"/"+layout.BlobDir+"/"+name)
		}
		if err != nil {
			_ = dst.Remove(tmp)
			return err
		}
		sb.Blobs++
		sb.BytesCopied += n
	}
	if err := dst.SyncDir(dir + "/" + layout.BlobDir); err != nil || !made {
		return err
	}
	// blobs/ itself is durable before the records that reference it.
	return dst.SyncDir(dir)
}

// copyFile writes r into a new file name of fsys, syncs it and returns
// the bytes written.
func copyFile(fsys vfs.FS, name string, r io.Reader) (int64, error) {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return 0, err
	}
	n, err := copyThrough(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// copyBufs are the buffers files are copied through (copyThrough):
// io.Copy's size, reused, where io.Copy allocates one for each file.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyThrough copies r into w through a buffer of copyBufs and returns
// the bytes copied. It reads with Read and writes with Write alone (never
// a file's ReadFrom or WriteTo), so that what r passes through, a hash
// taking the bytes as they are copied, sees every byte.
func copyThrough(w io.Writer, r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(layout.WriterOnly{Writer: w}, struct{ io.Reader }{r}, *bp)
}
