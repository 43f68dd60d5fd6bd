package maintenance

import (
	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// BackupReport says what Backup copied and whether the copy verified.
// Verify holds what checking each new session's copy found (a copy that
// differs from what was read is not published, and Skipped says so; a
// copy faithful to a damaged source is published, its problems here) and what
// verifying each session brought up to date in place found.
type BackupReport struct {
	Dest     string                    `json:"dest"`
	Sessions []SessionBackup           `json:"sessions"`
	Verify   sessionstore.VerifyReport `json:"verify"`
	Skipped  map[string]string         `json:"skipped,omitempty"` // id → why (deleted meanwhile, held, not published)
	// Unreadable lists the sessions that could not be read, and so were
	// not copied, with the reason (a damaged or missing log, a file this
	// user may not read). The others are copied all the same.
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
	// Unchanged counts the sessions the destination already held whole.
	Unchanged int `json:"unchanged"`
	// Deleted lists the sessions removed from the destination because
	// the source no longer has them (BackupOptions.Delete).
	Deleted []session.SessionID `json:"deleted,omitempty"`
	// BytesCopied is every byte written into the destination: logs,
	// settings, archive segments, manifests and blobs (of the sessions
	// published).
	BytesCopied int64 `json:"bytes_copied"`
}

// BackupOptions tunes a backup.
type BackupOptions struct {
	// Delete removes from the destination the sessions the source no
	// longer has; without it nothing in the destination is removed.
	Delete bool
	// Progress, when set, is called after each session with how many of
	// total are done (from one goroutine at a time).
	Progress func(done, total int)
}

// What a backup did to one session (SessionBackup.Action).
const (
	// BackupNew: the session was not in the destination; copied whole.
	BackupNew = "new"
	// BackupAppended: the destination held a prefix of the log; the
	// bytes past it were appended.
	BackupAppended = "appended"
	// BackupReplaced: the destination's log is not a prefix of the
	// source's (compacted or repaired since); copied whole, and Reason
	// says why.
	BackupReplaced = "replaced"
)

// OK reports whether every session was copied and the copy verifies.
func (r *BackupReport) OK() bool { return len(r.Unreadable) == 0 && r.Verify.OK() }

// SessionBackup is one session's copy.
type SessionBackup struct {
	ID           session.SessionID `json:"id"`
	Revision     uint64            `json:"revision"`
	LogBytes     int64             `json:"log_bytes"`
	ArchiveBytes int64             `json:"archive_bytes"`
	Segments     int               `json:"segments"`
	Blobs        int               `json:"blobs,omitempty"`
	// Action is what the backup did (BackupNew, BackupAppended,
	// BackupReplaced), Reason why a session was copied whole, and
	// BytesCopied the bytes it wrote for this session.
	Action      string `json:"action"`
	Reason      string `json:"reason,omitempty"`
	BytesCopied int64  `json:"bytes_copied"`
	// Forensic is the destination's copy of its old log, kept when a
	// replacement would have dropped revisions the source no longer has.
	Forensic string `json:"forensic,omitempty"`
}
