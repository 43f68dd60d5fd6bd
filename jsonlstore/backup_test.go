package jsonlstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// TestBackupDuringCompaction takes backups while a holder appends and
// compacts its session over and over: every backup verifies and holds
// every revision from 1 up to the one it copied, each equal to the
// source's.
func TestBackupDuringCompaction(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, _ := appendN(t, st, "bk", 30)
	_, _ = appendN(t, st, "bk-idle", 5)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var holderErr error
	go func() {
		defer wg.Done()
		for i := 0; i < 80; i++ { // bounded: each backup checks every revision
			select {
			case <-stop:
				return
			default:
			}
			rec, err := st.Load(ctx, "bk")
			if err != nil {
				holderErr = err
				return
			}
			if _, err := w.Append(ctx, rec.Revision, rec.Snapshot); err != nil {
				holderErr = err
				return
			}
			if i%3 == 0 {
				if _, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 1 + i%7}); err != nil {
					holderErr = err
					return
				}
			}
		}
	}()
	for round := range 4 {
		dest := filepath.Join(t.TempDir(), fmt.Sprintf("backup-%d", round))
		rep, err := st.Backup(ctx, dest)
		require.NoError(t, err)
		require.True(t, rep.Verify.OK(), "backup %d does not verify: %+v", round, rep.Verify)
		require.Len(t, rep.Sessions, 2)
		dst, err := Open(dest, Options{})
		require.NoError(t, err)
		verifyAtCleanup(t, dst)
		for _, sb := range rep.Sessions {
			var n uint64
			for rec, err := range dst.History(ctx, sb.ID) {
				require.NoError(t, err)
				n++
				require.Equal(t, n, rec.Revision)
				if n%10 == 1 || n == sb.Revision {
					src, err := st.LoadRevision(ctx, sb.ID, n)
					require.NoError(t, err)
					require.Equal(t, encodeRec(t, src), encodeRec(t, rec), "revision %d of %s", n, sb.ID)
				}
			}
			require.Equal(t, sb.Revision, n, "the backup holds every revision up to the copied one")
		}
		// The copy is a store of its own: a holder there takes over.
		w2, err := dst.Acquire(ctx, "bk", sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w2.Release(ctx))
		require.NoError(t, dst.Close())
	}
	close(stop)
	wg.Wait()
	require.NoError(t, holderErr)
	require.NoError(t, w.Release(ctx))

	// A session already in the destination, unchanged since, is left
	// alone.
	dest := t.TempDir()
	_, err := st.Backup(ctx, dest, "bk")
	require.NoError(t, err)
	rep, err := st.Backup(ctx, dest, session.SessionID("bk"))
	require.NoError(t, err)
	require.Empty(t, rep.Sessions)
	require.Equal(t, 1, rep.Unchanged)
}
