package sessionstore

import (
	"context"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// UsageReport is the space sessions occupy, in bytes, as Store.DiskUsage
// reports it. For a file store these are apparent file sizes, as ls -l
// shows them.
type UsageReport struct {
	Sessions []SessionUsage `json:"sessions"`
	// Total sums Sessions (its ID is empty), counting a file several of
	// them share once.
	Total SessionUsage `json:"total"`
	// LeftoverBytes is what a file store's temporary and trash directories
	// hold (creations and deletions in progress or interrupted). Counted
	// only when all sessions are reported, and not part of Total.
	LeftoverBytes int64 `json:"leftover_bytes,omitempty"`
	// Unreadable lists the sessions whose data could not be read, with the
	// reason; they are not part of Total.
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
}

// SessionUsage is the space one session occupies, by kind of data.
type SessionUsage struct {
	ID session.SessionID `json:"id,omitempty"`
	// LogBytes is the session's records (a file store's log.jsonl).
	LogBytes int64 `json:"log_bytes"`
	// ArchiveBytes is its archived records (0 until compaction has run).
	ArchiveBytes int64 `json:"archive_bytes"`
	// ForensicBytes is bytes removed from the log by recovery or repair,
	// kept for people to inspect.
	ForensicBytes int64 `json:"forensic_bytes"`
	// BlobBytes is the part content the session keeps out of line (a file
	// store's blobs/, as stored: compressed where that pays), each content
	// counted once however often its parts attach it.
	BlobBytes int64 `json:"blob_bytes"`
	// OtherBytes is the rest: lease and summary files, leftovers.
	OtherBytes int64 `json:"other_bytes"`
	// TotalBytes is the sum of the above.
	TotalBytes int64 `json:"total_bytes"`
	// SharedBytes is the part of TotalBytes in files the session shares
	// with another (a file store's fork holds its parent's blobs as hard
	// links): in a report's Total, each such file counted once.
	SharedBytes int64 `json:"shared_bytes,omitempty"`
}

// Add adds v's figures to u's (not its ID).
func (u *SessionUsage) Add(v SessionUsage) {
	u.LogBytes += v.LogBytes
	u.ArchiveBytes += v.ArchiveBytes
	u.ForensicBytes += v.ForensicBytes
	u.BlobBytes += v.BlobBytes
	u.OtherBytes += v.OtherBytes
	u.TotalBytes += v.TotalBytes
	u.SharedBytes += v.SharedBytes
}

// DiskUsage is s.DiskUsage(ctx, ids...), for callers written when
// reporting usage was an optional capability of a store.
func DiskUsage(ctx context.Context, s Store, ids ...session.SessionID) (UsageReport, error) {
	return s.DiskUsage(ctx, ids...)
}
