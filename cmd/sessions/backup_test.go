package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/stretchr/testify/require"
)

// storeIDs lists the session directories of a store root.
func storeIDs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var ids []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// logRevisions runs `sessions log ID --json` and returns the revisions it
// lists, in order.
func logRevisions(t *testing.T, root, id string) []uint64 {
	t.Helper()
	r := sessions(t, nil, "--dir", root, "log", id, "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	var revs []uint64
	for line := range strings.Lines(r.Stdout) {
		var rec struct {
			Revision uint64 `json:"revision"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		revs = append(revs, rec.Revision)
	}
	return revs
}

// export runs `sessions export ID`: every revision, as JSON Lines.
func export(t *testing.T, root, id string) string {
	t.Helper()
	r := sessions(t, nil, "--dir", root, "export", id, "--all-revisions")
	require.Equal(t, exitOK, r.Code, r.String())
	return r.Stdout
}

func oneTo(n uint64) []uint64 {
	revs := make([]uint64, n)
	for i := range revs {
		revs[i] = uint64(i) + 1
	}
	return revs
}

// TestCompactDemoStoreKeepLast1: the demo store compacted with
// --keep-last 1 still verifies, `sessions log` still lists every revision
// and `export` gives the same bytes as before; a backup of it verifies and
// exports the same again.
func TestCompactDemoStoreKeepLast1(t *testing.T) {
	root := t.TempDir()
	r := sessions(t, nil, "--dir", root, "demo", "--delay", "5ms")
	require.Equal(t, exitOK, r.Code, r.String())
	ids := storeIDs(t, root)
	require.Len(t, ids, 3)

	before := map[string]string{}
	last := map[string]uint64{}
	for _, id := range ids {
		revs := logRevisions(t, root, id)
		require.Equal(t, oneTo(uint64(len(revs))), revs)
		last[id] = uint64(len(revs))
		before[id] = export(t, root, id)
	}

	c := compactCmd(t, nil, "--dir", root, "--keep-last", "1", "--json")
	require.Equal(t, exitOK, c.Code, c.String())
	var rep struct {
		Totals struct {
			Compacted        int   `json:"compacted"`
			RevisionsTrimmed int64 `json:"revisions_trimmed"`
		} `json:"totals"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.Stdout), &rep), c.Stdout)
	require.Equal(t, len(ids), rep.Totals.Compacted, c.Stdout)
	require.Positive(t, rep.Totals.RevisionsTrimmed, c.Stdout)

	v := sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitOK, v.Code, v.String())
	for _, id := range ids {
		require.Equal(t, oneTo(last[id]), logRevisions(t, root, id), "log of %s after compaction", id)
		require.Equal(t, before[id], export(t, root, id), "export of %s after compaction", id)
		entries, err := os.ReadDir(filepath.Join(root, id, "archive"))
		require.NoError(t, err, "session %s has archives", id)
		require.NotEmpty(t, entries)
	}

	dest := filepath.Join(t.TempDir(), "backup")
	b := sessions(t, nil, "--dir", root, "backup", dest)
	require.Equal(t, exitOK, b.Code, b.String())
	require.Contains(t, b.Stdout, "3 sessions copied to "+dest)
	require.Contains(t, b.Stdout, "copy verified")
	for _, id := range ids {
		require.Equal(t, oneTo(last[id]), logRevisions(t, dest, id))
		require.Equal(t, before[id], export(t, dest, id), "export of %s from the backup", id)
	}
	// A second backup into the same place copies nothing: it is all there.
	again := sessions(t, nil, "--dir", root, "backup", dest, ids[0], "--json")
	require.Equal(t, exitOK, again.Code, again.String())
	var brep struct {
		Sessions  []json.RawMessage `json:"sessions"`
		Unchanged int               `json:"unchanged"`
		Bytes     int64             `json:"bytes_copied"`
	}
	require.NoError(t, json.Unmarshal([]byte(again.Stdout), &brep), again.Stdout)
	require.Empty(t, brep.Sessions)
	require.Equal(t, 1, brep.Unchanged)
	require.Zero(t, brep.Bytes)
}

// TestSyncCommand: `sessions sync A B` between a store and its backup,
// each appended to apart: the session is kept on each side and each gets
// the other's branch as a fork; both verify; a second sync changes
// nothing.
func TestSyncCommand(t *testing.T) {
	root := t.TempDir()
	r := sessions(t, nil, "--dir", root, "demo", "--delay", "5ms")
	require.Equal(t, exitOK, r.Code, r.String())
	ids := storeIDs(t, root)
	dest := filepath.Join(t.TempDir(), "usb")
	b := sessions(t, nil, "--dir", root, "backup", dest)
	require.Equal(t, exitOK, b.Code, b.String())
	for i, dir := range []string{root, dest} {
		w := sessions(t, nil, "--dir", dir, "label", ids[0], fmt.Sprintf("side=%d", i))
		require.Equal(t, exitOK, w.Code, w.String())
	}
	s := sessions(t, nil, "sync", root, dest)
	require.Equal(t, exitOK, s.Code, s.String())
	require.Contains(t, s.Stdout, "appended on both sides since revision")
	require.Contains(t, s.Stdout, "2 forks made")
	require.Len(t, storeIDs(t, root), len(ids)+1)
	require.Len(t, storeIDs(t, dest), len(ids)+1)
	for _, dir := range []string{root, dest} {
		v := sessions(t, nil, "--dir", dir, "verify")
		require.Equal(t, exitOK, v.Code, v.String())
	}
	s = sessions(t, nil, "--dir", root, "sync", dest, "--json")
	require.Equal(t, exitOK, s.Code, s.String())
	var rep struct {
		ToA   []json.RawMessage `json:"to_a"`
		ToB   []json.RawMessage `json:"to_b"`
		Forks []json.RawMessage `json:"forks"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Stdout), &rep), s.Stdout)
	require.Empty(t, rep.ToA)
	require.Empty(t, rep.ToB)
	require.Empty(t, rep.Forks)
}

// TestBackupDuringCompaction: backups taken while the compact command
// trims the same sessions again and again each verify, and each holds
// every revision, with the same content as the store.
func TestBackupDuringCompaction(t *testing.T) {
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	for i := range 3 {
		writeGrowingSession(t, st, fmt.Sprintf("s%d", i), 60)
	}
	require.NoError(t, st.Close())
	ids := storeIDs(t, root)
	want := map[string]string{}
	for _, id := range ids {
		want[id] = export(t, root, id)
	}

	var stop, done atomic.Bool
	var compactions atomic.Int64
	var wg sync.WaitGroup
	var compactErr error
	wg.Go(func() {
		defer done.Store(true)
		for keep := 59; keep >= 1 && !stop.Load(); keep -= 2 {
			c := compactCmd(t, nil, "--dir", root, "--keep-last", fmt.Sprint(keep), "--wait", "10s")
			if c.Code != exitOK {
				compactErr = fmt.Errorf("compact --keep-last %d:\n%s", keep, c)
				return
			}
			compactions.Add(1)
		}
	})
	backups := 0
	for ; backups < 3 || !done.Load() && backups < 100; backups++ {
		dest := filepath.Join(t.TempDir(), "backup")
		b := sessions(t, nil, "--dir", root, "backup", dest, "--json")
		require.Equal(t, exitOK, b.Code, b.String())
		var rep struct {
			Sessions []struct {
				ID       string `json:"id"`
				Revision uint64 `json:"revision"`
				Segments int    `json:"segments"`
			} `json:"sessions"`
		}
		require.NoError(t, json.Unmarshal([]byte(b.Stdout), &rep))
		require.Len(t, rep.Sessions, len(ids))
		for _, s := range rep.Sessions {
			require.Equal(t, oneTo(60), logRevisions(t, dest, s.ID), "backup %d of %s", backups, s.ID)
			require.Equal(t, want[s.ID], export(t, dest, s.ID), "backup %d of %s", backups, s.ID)
		}
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, compactErr)
	t.Logf("%d backups during %d compaction runs", backups, compactions.Load())
	require.Positive(t, compactions.Load())
}

// writeGrowingSession creates session name with revs revisions, each
// adding a message, and releases it.
func writeGrowingSession(t *testing.T, st *jsonlstore.Store, name string, revs int) {
	t.Helper()
	ctx := context.Background()
	s := sessiontest.New(name)
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "test"})
	require.NoError(t, err)
	for rev := uint64(1); rev < uint64(revs); rev++ {
		text := fmt.Sprintf("message %d: %s", rev, strings.Repeat("words ", int(rev%40)))
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, text, sessiontest.Epoch)))
		snap, err := sessnap.Of(s)
		require.NoError(t, err)
		_, err = w.Append(ctx, rev, snap)
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
}
