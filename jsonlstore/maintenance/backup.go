package maintenance

import (
	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// BackupReport says what Backup copied and whether the copy verified.
type BackupReport struct {
	Dest     string                    `json:"dest"`
	Sessions []SessionBackup           `json:"sessions"`
	Verify   sessionstore.VerifyReport `json:"verify"`
	Skipped  map[string]string         `json:"skipped,omitempty"` // id → why (deleted meanwhile)
	// Unreadable lists the sessions that could not be read, and so were
	// not copied, with the reason (a damaged or missing log, a file this
	// user may not read). The others are copied all the same.
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
}

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
}
