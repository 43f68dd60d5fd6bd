package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/session"
)

// DiskUsage reports, for each given session (all sessions, in ID order,
// when none is given), the bytes of its record lines as LogBytes and of
// its content kept out of line (pgstore_blobs, each content once) as
// BlobBytes: what the session occupies in those tables, before
// PostgreSQL's own row overhead, compression and indexes. A database store
// has no archives, forensic files or leftovers. It takes no lease and modifies
// nothing. Errors: ErrInvalidID, ErrNotFound for a given ID, ErrClosed,
// the database's.
func (s *Store) DiskUsage(ctx context.Context, ids ...session.SessionID) (sessionstore.UsageReport, error) {
	var rep sessionstore.UsageReport
	if err := adapter.ReadyIDs(s.ready(ctx), ids); err != nil {
		return rep, err
	}
	all := len(ids) == 0
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = string(id)
	}
	rows, err := s.pool.Query(ctx, `SELECT s.id,
			coalesce((SELECT sum(octet_length(r.line)) FROM pgstore_records r WHERE r.session_id = s.id), 0)::bigint,
			coalesce((SELECT sum(b.size) FROM pgstore_blobs b WHERE b.session_id = s.id), 0)::bigint
		FROM pgstore_sessions s
		WHERE $1 OR s.id = ANY($2)
		ORDER BY s.id`, all, names)
	if err != nil {
		return rep, opErr("du", "", err)
	}
	found := map[session.SessionID]sessionstore.SessionUsage{}
	var order []session.SessionID
	var id string
	var logBytes, blobBytes int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &logBytes, &blobBytes}, func() error {
		u := sessionstore.SessionUsage{ID: session.SessionID(id), LogBytes: logBytes, BlobBytes: blobBytes, TotalBytes: logBytes + blobBytes}
		found[u.ID] = u
		order = append(order, u.ID)
		return nil
	}); err != nil {
		return rep, opErr("du", "", err)
	}
	if !all {
		order = ids
	}
	for _, id := range order {
		u, ok := found[id]
		if !ok {
			return rep, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
		}
		rep.Sessions = append(rep.Sessions, u)
		rep.Total.Add(u)
	}
	return rep, nil
}
