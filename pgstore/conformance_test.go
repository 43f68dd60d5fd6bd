package pgstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/storetest"
)

// crashTTL is the lease TTL of the holders Crash kills: their leases
// expire that long after they die, well within the suite's bound.
const crashTTL = time.Second

// TestConformance runs the contract suite on PostgreSQL, each check on a
// database of its own. Supersede expires the holder's lease
// (ExpireLease), exactly what a holder paused past its TTL meets: its
// fencing check fails, and the next acquirer finds the lease stale. Crash
// kills a holder process (SIGKILL) once it holds the lease, with a TTL of
// crashTTL: its lease expires unannounced, as a dead machine's does.
func TestConformance(t *testing.T) {
	var dsns sync.Map // *pgstore.Store → its DSN
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) sessionstore.Store {
			dsn := newDSN(t)
			s, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
			require.NoError(t, err)
			dsns.Store(s, dsn)
			return s
		},
		Supersede: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			require.NoError(t, s.(*pgstore.Store).ExpireLease(t.Context(), id))
		},
		Crash: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			dsn, ok := dsns.Load(s)
			require.True(t, ok)
			p := startProc(t, procModeAppend, dsn.(string), id, "doomed", crashTTL)
			require.True(t, strings.HasPrefix(p.Next(t), "ready"))
			p.Kill(t)
		},
		Open: func(t *testing.T, s sessionstore.Store) sessionstore.Store {
			dsn, ok := dsns.Load(s)
			require.True(t, ok)
			o, err := pgstore.Open(context.Background(), dsn.(string), pgstore.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, o.Close()) })
			return o
		},
	})
}
