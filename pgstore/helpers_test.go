package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/pgstore"
)

// The optional interfaces pgstore implements, so that tools treat it as
// they treat a directory store.
var (
	_ sessionstore.Verifier     = (*pgstore.Store)(nil)
	_ sessionstore.RecordLister = (*pgstore.Store)(nil)
	_ sessionstore.Exporter     = (*pgstore.Store)(nil)
)

// newDSN returns the DSN of a fresh, migrated database.
func newDSN(t *testing.T) string {
	t.Helper()
	return pgtest.NewDatabaseFrom(t, "pgstore", func(ctx context.Context, dsn string) error {
		_, err := pgstore.Migrate(ctx, dsn)
		return err
	})
}

// mustOpen opens a store on a fresh, migrated database, closed when t
// ends.
func mustOpen(t *testing.T, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	return openDSN(t, newDSN(t), opts)
}

// openDSN opens a store on dsn, closed when t ends.
func openDSN(t *testing.T, dsn string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), dsn, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}
