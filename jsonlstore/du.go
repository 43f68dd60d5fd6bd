package jsonlstore

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/usage"
	"github.com/sessionstore/sessionstore/session"
)

// DiskUsage reports the bytes each given session occupies (all sessions,
// in ID order, when none is given), and their total: apparent file sizes,
// as ls -l shows them, not allocated blocks, by kind of file (its
// log.jsonl, everything under archive/, everything under forensic/,
// everything under blobs/ as stored, and the rest: lease and summary
// files, leftovers). A file with several names (a fork's blobs and pages
// are hard links of its parent's) counts in full for each session that
// names it, and in its SharedBytes; the total counts it once. LeftoverBytes is what the temporary and trash
// directories at the root hold (the next repair sweeps old ones). It reads
// directory entries only, takes no lease and modifies nothing; on a live
// store the figures are a moment's. A session whose directory cannot be
// read goes into the report's Unreadable list. Errors: ErrClosed,
// ErrInvalidID, ErrNotFound for a given ID (a session deleted while
// DiskUsage lists all sessions is skipped), a root it cannot list.
func (s *Store) DiskUsage(ctx context.Context, ids ...session.SessionID) (sessionstore.UsageReport, error) {
	return usage.New(s.root, s.check).Report(ctx, ids, s.forSessions)
}
