package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// changesChannel is the NOTIFY channel of every create, append and
// delete, and of every change of a lease's holder (an acquisition, a
// release, ExpireLease; not a heartbeat); the payload is the session ID.
// Watch listens on it.
const changesChannel = "pgstore_changes"

// latest is what a session's summary row says of its latest record: what
// an append checks against.
type latest struct {
	rev      uint64
	schema   int
	time     time.Time
	logBytes int64
	// newer is set when the latest record was written by a newer program
	// (a record format or kind this one does not know).
	newer error
}

// latestOf reads the summary row of id (inside the caller's transaction,
// whose lock on the session row keeps it current).
func latestOf(ctx context.Context, tx pgx.Tx, id session.SessionID) (latest, error) {
	var l latest
	var rev, secs, logBytes int64
	var nsecs int32
	var kind string
	var head []byte
	err := tx.QueryRow(ctx, `SELECT s.revision, s.schema, s.updated_s, s.updated_ns, s.log_bytes,
			coalesce(r.kind, ''), coalesce(substring(r.line from 1 for 64), ''::bytea)
		FROM pgstore_summaries s LEFT JOIN pgstore_records r ON r.session_id = s.session_id AND r.rev = s.revision
		WHERE s.session_id = $1`, string(id)).Scan(&rev, &l.schema, &secs, &nsecs, &logBytes, &kind, &head)
	if err != nil {
		return l, err
	}
	l.time, l.logBytes = time.Unix(secs, int64(nsecs)).UTC(), logBytes
	l.rev, err = fromBigint("revision", rev)
	if v, ok := record.PeekVersion(head); ok && record.Newer(v, kind) {
		l.newer = &sessionstore.NewerRecordError{ID: id, Path: recordsPath, Revision: l.rev, Version: v, Kind: kind}
	}
	return l, err
}

// appendTx writes line, record m, as revision prev.rev+1 of id: the
// record row, the summary row and the change notification, all in tx, so
// a reader sees all of them or none.
func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, id session.SessionID, snap *sessnap.Snapshot, m record.Meta, line []byte, prev latest) (uint64, error) {
	if err := insertRecord(ctx, tx, id, m, line); err != nil {
		return 0, err
	}
	sum := summary.Project(snap, m.Rev, m.Gen, m.Time)
	sum.Sizes.LogBytes = prev.logBytes + int64(len(line))
	if err := putSummary(ctx, tx, &sum, m.Schema); err != nil {
		return 0, err
	}
	return m.Rev, nil
}

// insertRecord stores one record line verbatim with its envelope columns.
func insertRecord(ctx context.Context, tx pgx.Tx, id session.SessionID, m record.Meta, line []byte) error {
	rev, gen, err := toBigints(m.Rev, m.Gen)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO pgstore_records (session_id, rev, gen, time, kind, schema, line)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		string(id), rev, gen, m.Time, m.Kind, m.Schema, line)
	return err
}

// putSummary replaces the summary row of sum.ID and notifies watchers (at
// commit: NOTIFY is transactional).
func putSummary(ctx context.Context, tx pgx.Tx, sum *summary.Summary, schema int) error {
	sum.Lease = summary.LeaseStatus{} // computed when read, never stored
	rev, gen, err := toBigints(sum.Revision, sum.Generation)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO pgstore_summaries
		(session_id, revision, generation, schema, state, kind, parent_id, created_s, created_ns, updated_s, updated_ns, log_bytes, doc)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (session_id) DO UPDATE SET
			revision = excluded.revision, generation = excluded.generation, schema = excluded.schema,
			state = excluded.state, kind = excluded.kind, parent_id = excluded.parent_id,
			created_s = excluded.created_s, created_ns = excluded.created_ns,
			updated_s = excluded.updated_s, updated_ns = excluded.updated_ns,
			log_bytes = excluded.log_bytes, doc = excluded.doc`,
		string(sum.ID), rev, gen, schema, string(sum.State), string(sum.Kind),
		string(sum.ParentID), sum.CreatedAt.Unix(), int32(sum.CreatedAt.Nanosecond()), //nolint:gosec // G115: nanoseconds are < 1e9
		sum.UpdatedAt.Unix(), int32(sum.UpdatedAt.Nanosecond()), sum.Sizes.LogBytes, doc) //nolint:gosec // G115: nanoseconds are < 1e9
	if err != nil {
		return err
	}
	return notify(ctx, tx, sum.ID)
}

func notify(ctx context.Context, tx pgx.Tx, id session.SessionID) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, changesChannel, string(id))
	return err
}

// wrapErr adds the operation and session to an error, leaving errors that
// already say so (the contract's sentinels, wrapped with the session)
// as they are.
func wrapErr(op string, id session.SessionID, err error) error {
	for _, known := range []error{
		sessionstore.ErrExists, sessionstore.ErrNotFound, sessionstore.ErrConflict,
		sessionstore.ErrLeaseLost, sessionstore.ErrLeaseHeld, sessionstore.ErrSchemaTooNew,
		sessionstore.ErrClosed, sessionstore.ErrCorrupt, sessionstore.ErrWriterFailed,
		sessionstore.ErrInvalidSnapshot, sessionstore.ErrTooLarge,
	} {
		if errors.Is(err, known) {
			return err
		}
	}
	return opErr(op, id, err)
}

// opErr is the store's operational error: operation op on session id
// ("" for the store as a whole) failed with err.
func opErr(op string, id session.SessionID, err error) error {
	return &sessionstore.OpError{Store: "pgstore", Op: op, ID: id, Err: err}
}
