package jsonlstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// TestCatalogForgedRootHidesNothing: a root file forged by someone who can
// write .catalog (naming the current catalog and the root directory's
// current state, settled) after a session the catalog lacks was created
// does not hide that session from a listing, nor make verify report it
// hidden; a root file the store writes itself is still believed.
func TestCatalogForgedRootHidesNothing(t *testing.T) {
	ctx := context.Background()
	ahead := func() time.Time { return time.Now().Add(catalog.SettleTime + time.Second) }
	st := openTestStoreWith(t, Options{Now: ahead})
	catFill(t, st, 5, "s")
	_, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	rootPath := filepath.Join(st.Dir(), catalogfile.RootPath)
	require.FileExists(t, rootPath, "the root had settled by the store's clock")
	fi, err := os.Lstat(st.Dir())
	require.NoError(t, err)
	if catalogfile.DirStateOf(fi).Nlink < 2 {
		t.Skip("this file system does not count subdirectories in a directory's link count")
	}

	readCatalog := func() (*catalog.File, catalog.DirState) {
		b, err := os.ReadFile(filepath.Join(st.Dir(), catalogfile.Path))
		require.NoError(t, err)
		f, err := catalog.Decode(bytes.NewReader(b), int64(len(b)))
		require.NoError(t, err)
		fi, err := os.Lstat(st.Dir())
		require.NoError(t, err)
		return f, catalogfile.DirStateOf(fi)
	}

	// The store's own root file is believed.
	f, now := readCatalog()
	r, ok := st.cat.ReadRoot()
	require.True(t, st.cat.RootTrusted(r, ok, f, now), "the store's own root file")

	// Another handle creates t000; nothing lists before the forger writes a
	// root file vouching for the catalog without it.
	catFill(t, st, 1, "t")
	f, now = readCatalog()
	require.Negative(t, f.Find("t000"))
	forged := catalog.Root{Catalog: f.ID, Dir: now, Observed: max(now.Mtime, now.Ctime) + catalog.SettleTime}
	require.NoError(t, os.WriteFile(rootPath, catalog.EncodeRoot(forged), 0o600))

	other, err := Open(st.Dir(), Options{Now: ahead})
	require.NoError(t, err)
	defer other.Close()
	page, err := other.List(ctx, summary.Query{Limit: summary.MaxLimit})
	require.NoError(t, err)
	var ids []session.SessionID
	for _, it := range page.Items {
		ids = append(ids, it.ID)
	}
	require.Contains(t, ids, session.SessionID("t000"), "the forged root file hid a session")
	rep, err := other.VerifyCatalog(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
}
