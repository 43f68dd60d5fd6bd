package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// PublishLease is what Publish needs of the lease held in a new
// session's temporary directory.
type PublishLease interface {
	// SyncRecord makes the lease record written in the temporary
	// directory durable in its file.
	SyncRecord() error
	// Moved tells the lease its directory was renamed to dir.
	Moved(dir string) error
}

// Publish makes new session id, built in the temporary directory tmp
// under lease l, visible, atomically: it syncs l's record and tmp,
// renames tmp into place with RENAME_NOREPLACE (sessionstore.ErrExists if
// the ID was taken meanwhile) and syncs the root. The log must be synced
// before. published reports that tmp is renamed: from then on the
// session is visible, and undoing it is not the creator's to do any more;
// when syncing the root fails it is visible but perhaps not durable, and
// the error says so.
func (r *Root) Publish(tmp string, id session.SessionID, l PublishLease) (published bool, err error) {
	// The lease record was written in place, unsynced (DirSynced): it
	// must be durable before the rename publishes it, as must the
	// directory's entries (log, lease files, settings), or a crash could
	// publish an empty session.
	if err := l.SyncRecord(); err != nil {
		return false, OpErr("create", id, fmt.Errorf("lease: %w", err))
	}
	if err := r.FS.SyncDir(tmp); err != nil {
		return false, OpErr("create", id, err)
	}
	if err := r.FS.RenameNoReplace(tmp, SessionDir(id)); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return false, fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
		}
		return false, OpErr("create", id, fmt.Errorf("publish: %w", err))
	}
	if err := r.FS.SyncDir("."); err != nil {
		// Published but maybe not durable: the session is visible, so the
		// next holder goes on from here.
		_ = l.Moved(r.Abs(SessionDir(id)))
		return true, OpErr("create", id, fmt.Errorf("sync root: %w", err))
	}
	if err := l.Moved(r.Abs(SessionDir(id))); err != nil {
		return true, OpErr("create", id, err)
	}
	return true, nil
}
