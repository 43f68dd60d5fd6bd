package jsonlstore

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/offline"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Backup copies sessions ids (all when none) into the store at dest
// (created if missing), checking each new session's copy before it is
// published (a copy that does not check is never published: the report
// says why) and verifying each session it brought up to date. The copy is consistent: every revision of a session at the
// moment its log was opened, from revision 1, each exactly once. A session
// that cannot be read is reported in the report's Unreadable list and the
// others are copied. A dest that is the store's root or lies inside it is
// refused (ErrBackupInsideStore) before anything is created.
func (s *Store) Backup(ctx context.Context, dest string, ids ...session.SessionID) (maintenance.BackupReport, error) {
	return s.BackupWith(ctx, dest, maintenance.BackupOptions{}, ids...)
}

// BackupWith is Backup with options. A session dest already holds is
// brought up to date: the bytes its log lacks are appended when its log
// is a prefix of the source's (compared by the records' checksums), and
// it is copied whole, with the reason in the report, when not (compacted
// or repaired since). opts.Delete deletes from dest the sessions this
// store no longer has.
func (s *Store) BackupWith(ctx context.Context, dest string, opts maintenance.BackupOptions, ids ...session.SessionID) (maintenance.BackupReport, error) {
	rep := maintenance.BackupReport{Dest: dest}
	if s.closed.Load() {
		return rep, sessionstore.ErrClosed
	}
	if err := offline.CheckBackupDest(s.osRoot, s.dir, dest); err != nil {
		return rep, err
	}
	if err := sessionstore.ValidateIDs(ids...); err != nil {
		return rep, err
	}
	dst, err := Open(dest, Options{MaxRecordBytes: s.opts.MaxRecordBytes})
	if err != nil {
		return rep, err
	}
	defer func() { _ = dst.Close() }() // only the root handle: every copy is synced and closed on its own
	_, err = s.offline().Backup(ctx, dst.offline(), ids, s.forSessions, opts, &rep)
	return rep, err
}
