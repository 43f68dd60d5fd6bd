package pgstore

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

func TestMigrationsAreNumberedInOrder(t *testing.T) {
	ms, err := migrations()
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for i, m := range ms {
		require.Equal(t, i+1, m.version, "migration %s", m.name)
	}
	require.Equal(t, len(ms), SchemaVersion())
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)

	_, err := Open(ctx, dsn, Options{})
	require.ErrorIs(t, err, ErrSchemaOutdated, "an unmigrated database is refused")

	// Concurrent first migrations: one applies, the others wait and find
	// the work done.
	reports := make([]MigrateReport, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Go(func() { reports[i], errs[i] = Migrate(ctx, dsn) })
	}
	wg.Wait()
	applied := 0
	for i, rep := range reports {
		require.NoError(t, errs[i])
		require.Equal(t, SchemaVersion(), rep.To)
		applied += len(rep.Applied)
	}
	require.Equal(t, SchemaVersion(), applied, "each migration applied exactly once")

	rep, err := Migrate(ctx, dsn)
	require.NoError(t, err)
	require.Equal(t, MigrateReport{From: SchemaVersion(), To: SchemaVersion()}, rep, "a current database is left alone")
	s, err := Open(ctx, dsn, Options{})
	require.NoError(t, err)
	rep, err = s.Migrate(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Applied)
	require.NoError(t, s.Close())

	// A newer program migrated it: refused by Open and by Migrate.
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO pgstore_schema (version, name) VALUES ($1, 'from the future')`, SchemaVersion()+1)
	require.NoError(t, err)
	_, err = Open(ctx, dsn, Options{})
	require.ErrorIs(t, err, ErrSchemaNewer)
	_, err = Migrate(ctx, dsn)
	require.ErrorIs(t, err, ErrSchemaNewer)
}

// TestMigrateFromVersion1: a database of schema version 1 with a session
// in it takes the migrations after it (the blob table, search, the record
// cap); the session reads and appends as before, its content now kept out
// of line, and its first holder since records its cap.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	ms, err := migrations()
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, createSchemaTable)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, ms[0].sql)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO pgstore_schema (version, name) VALUES (1, $1)`, ms[0].name)
	require.NoError(t, err)
	// A session as version 1 wrote it: a full record and its summary.
	snap := sessiontest.Snap(t, sessiontest.Titled("old", "from version 1"))
	payload, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	m := record.Meta{Version: record.Version1, Schema: sessnap.SchemaVersion, Rev: 1, Gen: 1, Time: sessiontest.Epoch, Kind: record.KindFull}
	_, err = conn.Exec(ctx, `INSERT INTO pgstore_sessions (id, generation, lease_state) VALUES ('old', 1, 'free')`)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := insertRecord(ctx, tx, "old", m, record.Encode(m, payload)); err != nil {
			return err
		}
		sum := summary.Project(&snap, 1, 1, m.Time)
		return putSummary(ctx, tx, &sum, m.Schema)
	}))

	_, err = Open(ctx, dsn, Options{})
	require.ErrorIs(t, err, ErrSchemaOutdated)
	rep, err := Migrate(ctx, dsn)
	require.NoError(t, err)
	require.Equal(t, MigrateReport{From: 1, To: 4, Applied: []string{"0002_blobs.sql", "0003_search.sql", "0004_record_cap.sql"}}, rep)
	var recorded int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT max_record_bytes FROM pgstore_sessions WHERE id = 'old'`).Scan(&recorded))
	require.Zero(t, recorded, "a session from before version 4 records no cap")

	s, err := Open(ctx, dsn, Options{})
	require.NoError(t, err)
	defer s.Close()
	rec, err := s.Load(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, "from version 1", rec.Snapshot.Title)
	w, err := s.Acquire(ctx, "old", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	restored, err := rec.Session()
	require.NoError(t, err)
	require.NoError(t, restored.AppendMessage(session.TextMessage(session.RoleUser, strings.Repeat("large ", 10<<10), sessiontest.Epoch)))
	next, err := sessnap.Of(restored)
	require.NoError(t, err)
	_, err = w.Append(ctx, 1, next)
	require.NoError(t, err)
	require.NoError(t, conn.QueryRow(ctx, `SELECT max_record_bytes FROM pgstore_sessions WHERE id = 'old'`).Scan(&recorded))
	require.Equal(t, int64(sessionstore.DefaultMaxRecordBytes), recorded, "its first holder since records its own")
	var blobs int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pgstore_blobs WHERE session_id = 'old'`).Scan(&blobs))
	require.Equal(t, 1, blobs)
	rec, err = s.Load(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, next, rec.Snapshot)
}
