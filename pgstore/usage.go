package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// DiskUsage reports, for each given session (all sessions, in ID order,
// when none is given), the bytes of its record lines as LogBytes: what
// the session's records occupy in the records table, before PostgreSQL's
// own row overhead, compression and indexes. A database store has no
// archives, forensic files or leftovers. It takes no lease and modifies
// nothing. Errors: ErrInvalidID, ErrNotFound for a given ID, ErrClosed,
// the database's.
func (s *Store) DiskUsage(ctx context.Context, ids ...session.SessionID) (sessionstore.UsageReport, error) {
	var rep sessionstore.UsageReport
	if err := s.ready(ctx); err != nil {
		return rep, err
	}
	for _, id := range ids {
		if err := sessionstore.ValidateID(id); err != nil {
			return rep, err
		}
	}
	all := len(ids) == 0
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = string(id)
	}
	rows, err := s.pool.Query(ctx, `SELECT s.id, coalesce(sum(octet_length(r.line)), 0)::bigint
		FROM pgstore_sessions s LEFT JOIN pgstore_records r ON r.session_id = s.id
		WHERE $1 OR s.id = ANY($2)
		GROUP BY s.id ORDER BY s.id`, all, names)
	if err != nil {
		return rep, fmt.Errorf("pgstore: du: %w", err)
	}
	found := map[session.SessionID]sessionstore.SessionUsage{}
	var order []session.SessionID
	var id string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		u := sessionstore.SessionUsage{ID: session.SessionID(id), LogBytes: n, TotalBytes: n}
		found[u.ID] = u
		order = append(order, u.ID)
		return nil
	}); err != nil {
		return rep, fmt.Errorf("pgstore: du: %w", err)
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
