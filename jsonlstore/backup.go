package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
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
// with RENAME_NOREPLACE; the whole destination is verified at the end.

// BackupReport says what Backup copied and whether the copy verified.
type BackupReport struct {
	Dest     string            `json:"dest"`
	Sessions []SessionBackup   `json:"sessions"`
	Verify   VerifyReport      `json:"verify"`
	Skipped  map[string]string `json:"skipped,omitempty"` // id → why (deleted meanwhile)
}

// SessionBackup is one session's copy.
type SessionBackup struct {
	ID           session.SessionID `json:"id"`
	Revision     uint64            `json:"revision"`
	LogBytes     int64             `json:"log_bytes"`
	ArchiveBytes int64             `json:"archive_bytes"`
	Segments     int               `json:"segments"`
}

// Backup copies sessions ids (all when none) into the store at dest
// (created if missing; a session already there is an error), then verifies
// the copy. The copy is consistent: every revision of a session at the
// moment its log was opened, from revision 1, each exactly once.
func (s *Store) Backup(ctx context.Context, dest string, ids ...session.SessionID) (BackupReport, error) {
	rep := BackupReport{Dest: dest}
	if s.closed.Load() {
		return rep, sessionstore.ErrClosed
	}
	if len(ids) == 0 {
		var err error
		if ids, err = s.sessionIDs(); err != nil {
			return rep, err
		}
	}
	dst, err := Open(dest, Options{MaxRecordBytes: s.opts.MaxRecordBytes})
	if err != nil {
		return rep, err
	}
	defer func() { _ = dst.Close() }() // only the root handle: every copy is synced and closed on its own
	var copied []session.SessionID
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := sessionstore.ValidateID(id); err != nil {
			return rep, err
		}
		sb, err := s.backupSession(id, dst)
		if errors.Is(err, sessionstore.ErrNotFound) {
			if rep.Skipped == nil {
				rep.Skipped = map[string]string{}
			}
			rep.Skipped[string(id)] = "deleted while backing up"
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("jsonlstore: backup %s: %w", id, err)
		}
		rep.Sessions = append(rep.Sessions, sb)
		copied = append(copied, id)
	}
	if len(copied) > 0 {
		rep.Verify, err = dst.Verify(ctx, copied...)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func (s *Store) backupSession(id session.SessionID, dst *Store) (SessionBackup, error) {
	sb := SessionBackup{ID: id}
	if err := s.exists(id); err != nil {
		return sb, err
	}
	if _, err := dst.fs.Lstat(sessionDir(id)); err == nil {
		return sb, fmt.Errorf("%w: session %s in the destination", sessionstore.ErrExists, id)
	}
	v, err := openView(s.fs, id, s.opts.MaxRecordBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return sb, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	if err != nil {
		return sb, err
	}
	defer func() { _ = v.Close() }() // read-only
	last, _, err := s.latest(id, v)
	if err != nil {
		return sb, err
	}
	first, ok := firstRevOf(v)
	if !ok {
		return sb, &sessionstore.CorruptionError{ID: id, Path: v.name, Err: errors.New("the log's first record is unreadable")}
	}
	var segs []archiveSegment
	if first > 1 {
		m, err := readManifest(s.fs, id)
		if err != nil {
			return sb, archiveCorruption(id, manifestFile, 0, err)
		}
		if segs, err = m.archivedBelow(first); err != nil {
			return sb, archiveCorruption(id, manifestFile, 0, err)
		}
	}

	tmp := tmpDirPrefix + string(id) + "-" + randomSuffix()
	if err := dst.fs.Mkdir(tmp, dirPerm); err != nil {
		return sb, err
	}
	published := false
	defer func() {
		if !published {
			_ = dst.fs.RemoveAll(tmp)
		}
	}()
	if err := copyInto(dst.fs, tmp+"/"+LogFile, io.NewSectionReader(v.f, 0, last.End())); err != nil {
		return sb, err
	}
	sb.LogBytes, sb.Revision, sb.Segments = last.End(), last.Rev, len(segs)
	if len(segs) > 0 {
		if err := dst.fs.Mkdir(tmp+"/"+ArchiveDir, dirPerm); err != nil {
			return sb, err
		}
		for _, seg := range segs {
			f, err := s.fs.OpenFile(archiveDir(id)+"/"+seg.File, osRDONLY, 0)
			if err != nil {
				return sb, archiveCorruption(id, seg.File, seg.First, err)
			}
			err = copyInto(dst.fs, tmp+"/"+ArchiveDir+"/"+seg.File, f)
			_ = f.Close() // read-only; copyInto's error is checked below
			if err != nil {
				return sb, err
			}
			sb.ArchiveBytes += seg.ZstBytes
		}
		b, err := frameJSON(manifest{Version: manifestVersion, Segments: segs})
		if err != nil {
			return sb, err
		}
		if err := copyInto(dst.fs, tmp+"/"+ArchiveDir+"/"+manifestFile, bytes.NewReader(b)); err != nil {
			return sb, err
		}
		if err := dst.fs.SyncDir(tmp + "/" + ArchiveDir); err != nil {
			return sb, err
		}
	}
	if err := dst.fs.SyncDir(tmp); err != nil {
		return sb, err
	}
	if err := dst.fs.RenameNoReplace(tmp, sessionDir(id)); err != nil {
		return sb, err
	}
	published = true
	return sb, dst.fs.SyncDir(".")
}

// copyInto writes r into a new file name of fsys and syncs it.
func copyInto(fsys vfs.FS, name string, r io.Reader) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, err = io.Copy(writerOnly{f}, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
