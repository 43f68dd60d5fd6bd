package pgstore

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
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
