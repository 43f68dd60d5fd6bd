package jsonlstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/storetest"
)

// TestConformance runs the contract suite against the file store.
// Supersede replaces the session's lock file, as a restored or tampered
// directory would: the holder's fencing check then fails (its lock is on
// the old file) and the next acquirer finds an unreleased record: stale.
// Crash kills a holder process (SIGKILL) once it holds the lease. Damage
// deletes the session's log, leaving its other files.
//
// It runs with delta records (the default) and with full records only,
// with the search index (fts), as the CLI opens stores.
func TestConformance(t *testing.T) {
	for _, opts := range []jsonlstore.Options{{Search: fts.New()}, {FullRecordsOnly: true, Search: fts.New()}} {
		t.Run(fmt.Sprintf("full-records-only=%v", opts.FullRecordsOnly), func(t *testing.T) {
			conformance(t, opts)
		})
	}
}

func conformance(t *testing.T, opts jsonlstore.Options) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) sessionstore.Store {
			st, err := jsonlstore.Open(t.TempDir(), opts)
			require.NoError(t, err)
			return st
		},
		Supersede: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			dir := filepath.Join(s.(*jsonlstore.Store).Dir(), string(id))
			fresh := filepath.Join(dir, ".lease.lock.replacement")
			require.NoError(t, os.WriteFile(fresh, nil, 0o600))
			require.NoError(t, os.Rename(fresh, filepath.Join(dir, "lease.lock")))
		},
		Crash: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			jsonlstore.KillHolder(t, s.(*jsonlstore.Store).Dir(), id)
		},
		Damage: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			require.NoError(t, os.Remove(filepath.Join(s.(*jsonlstore.Store).Dir(), string(id), jsonlstore.LogFile)))
		},
		Open: func(t *testing.T, s sessionstore.Store) sessionstore.Store {
			st, err := jsonlstore.Open(s.(*jsonlstore.Store).Dir(), opts)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			return st
		},
		// Full records are format 1 records: their content is inline.
		InlineContent: opts.FullRecordsOnly,
	})
}
