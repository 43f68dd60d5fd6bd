package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// TestCompactDryRunWritesNothing: compact --dry-run (sessions compact and
// the compact command) leaves every file and
// directory under the store as it found it (names, sizes, modes,
// modification times, bytes), on a store whose catalog was never written
// and on one whose catalog is stale.
func TestCompactDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	for _, id := range []string{"dry-a", "dry-b", "dry-c"} {
		writeSession(t, st, sessiontest.InState(id, session.StateIdle), 3)
	}
	require.NoError(t, st.Close())
	_, err = os.Stat(filepath.Join(root, ".catalog", "catalog"))
	require.ErrorIs(t, err, fs.ErrNotExist, "the store starts without a catalog")

	dryRun := func(what string) {
		t.Helper()
		before := storeFiles(t, root)
		time.Sleep(10 * time.Millisecond) // so that a rewrite would show in a modification time
		for _, args := range [][]string{{"--keep-last", "1"}, {"--keep-last", "1", "--json"}, {"--keep-last", "2", "dry-b"}} {
			r := sessions(t, nil, append([]string{"--dir", root, "compact", "--dry-run"}, args...)...)
			require.Equal(t, exitOK, r.Code, "%s %v: %s", what, args, r.Stderr)
			require.Equal(t, before, storeFiles(t, root), "%s: compact --dry-run %v changed the store", what, args)
			r = compactCmd(t, nil, append([]string{"--dry-run", "--dir", root}, args...)...)
			require.Equal(t, exitOK, r.Code, "%s: compact %v: %s", what, args, r.Stderr)
			require.Equal(t, before, storeFiles(t, root), "%s: the compact command's --dry-run %v changed the store", what, args)
		}
	}
	dryRun("no catalog")

	// A listing writes the catalog; a later append makes it stale.
	st, err = jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	_, err = st.List(ctx, summary.Query{})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, ".catalog", "catalog"))
	require.NoError(t, err, "a listing writes the catalog")
	w, err := st.Acquire(ctx, "dry-a", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	snap, err := sessnap.Of(sessiontest.InState("dry-a", session.StateIdle))
	require.NoError(t, err)
	_, err = w.Append(ctx, w.Revision(), snap)
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, st.Close())
	dryRun("stale catalog")

	// Without --dry-run the command still keeps the catalog.
	r := sessions(t, nil, "--dir", root, "compact", "--keep-last", "1")
	require.Equal(t, exitOK, r.Code, r.Stderr)
}

// storeFiles returns the state of every file and directory under root: mode, size,
// modification time and a digest of its bytes.
func storeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		size, sum := fi.Size(), ""
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("sha256 %x", sha256.Sum256(b))
		}
		if d.IsDir() {
			size = 0 // a directory's size says nothing of its entries on every file system
		}
		out[p] = fmt.Sprintf("%v %d bytes, modified %s, %s", fi.Mode(), size, fi.ModTime().Format(time.RFC3339Nano), sum)
		return nil
	}))
	return out
}
