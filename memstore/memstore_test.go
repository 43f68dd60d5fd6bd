package memstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/storetest"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

// harness is the memstore harness of the conformance suite.
var harness = storetest.Harness{
	New: func(*testing.T) sessionstore.Store { return memstore.New(memstore.Options{}) },
	Supersede: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
		require.NoError(t, s.(*memstore.Store).Supersede(t.Context(), id))
	},
	// memstore's leases live in one process: a holder dies when it is
	// superseded, with nobody taking over (the in-memory analogue of a
	// killed process).
	Crash: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
		_, err := s.TryAcquire(t.Context(), id, sessionstore.AcquireOptions{Label: "doomed"})
		require.NoError(t, err)
		require.NoError(t, s.(*memstore.Store).Supersede(t.Context(), id))
	},
}

func TestConformance(t *testing.T) { storetest.Run(t, harness) }
