package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/storetest"
)

// TestConformance runs the contract suite on PostgreSQL, each check on a
// database of its own. Supersede expires the holder's lease
// (ExpireLease), exactly what a holder paused past its TTL meets: its
// fencing check fails, and the next acquirer finds the lease stale.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) sessionstore.Store {
			dsn := newDSN(t)
			s, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
			require.NoError(t, err)
			return s
		},
		Supersede: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			require.NoError(t, s.(*pgstore.Store).ExpireLease(t.Context(), id))
		},
	})
}
