package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

// TestVerifyReindexCatalog: verify checks the catalog of a directory store
// when it checks every session (a missing catalog is a note, a damaged one
// a problem and exit status 3); reindex rebuilds it; a catalog deleted by
// hand costs ls nothing but time.
func TestVerifyReindexCatalog(t *testing.T) {
	root, _ := projectsStore(t)
	catalogFile := filepath.Join(root, jsonlstore.CatalogDir, "catalog")

	r := sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "catalog: missing\n  note: no catalog")

	require.Equal(t, exitOK, sessions(t, nil, "--dir", root, "ls").Code)
	require.FileExists(t, catalogFile, "a listing writes the catalog")
	r = sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "catalog: current (4 entries, 4 checked against their logs)\n")
	r = sessions(t, nil, "--dir", root, "verify", "--quiet")
	require.NotContains(t, r.Stdout, "catalog", "quiet: a sound catalog says nothing")
	r = sessions(t, nil, "--dir", root, "verify", "--json")
	var rep struct {
		Sessions []json.RawMessage
		Catalog  jsonlstore.CatalogVerifyReport
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stdout)
	require.Len(t, rep.Sessions, 4)
	require.Equal(t, jsonlstore.CatalogCurrent, rep.Catalog.State)

	// A byte of a summary flipped: a problem of the catalog, exit 3; the
	// sessions are sound, and listings still show every one.
	b, err := os.ReadFile(catalogFile)
	require.NoError(t, err)
	b[len(b)-10] ^= 0x20
	require.NoError(t, os.WriteFile(catalogFile, b, 0o600))
	r = sessions(t, nil, "--dir", root, "verify", "--quiet")
	require.Equal(t, exitCorrupt, r.Code, r.String())
	require.Contains(t, r.Stdout, "catalog: DAMAGED")
	require.Contains(t, r.Stdout, "  problem: .catalog/catalog: catalog: damaged")
	require.Contains(t, r.Stdout, "'sessions reindex' rebuilds it")
	r = sessions(t, nil, "--dir", root, "verify", "p1-parser")
	require.Equal(t, exitOK, r.Code, "a verify of named sessions leaves the catalog out: %s", r.String())
	require.NotContains(t, r.Stdout, "catalog")
	r = sessions(t, nil, "--dir", root, "verify", "--json")
	require.Equal(t, exitCorrupt, r.Code)
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stdout)
	require.Equal(t, jsonlstore.CatalogDamaged, rep.Catalog.State)
	require.NotEmpty(t, rep.Catalog.Problems)

	// reindex rebuilds it.
	r = sessions(t, nil, "--dir", root, "reindex")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Equal(t, "catalog: 4 sessions\nsearch index: 4 sessions indexed\n", r.Stdout)
	r = sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "catalog: current")
	r = sessions(t, nil, "--dir", root, "reindex", "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	var rr struct {
		Catalog jsonlstore.CatalogReport
		Search  sessionstore.SearchIndexReport
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rr), r.Stdout)
	require.Equal(t, 4, rr.Catalog.Sessions)
	require.Equal(t, 4, rr.Search.Sessions)
	require.Equal(t, exitUsage, sessions(t, nil, "--dir", root, "reindex", "extra").Code)

	// Deleted by hand: ls lists every session, verify notes it.
	require.NoError(t, os.RemoveAll(filepath.Join(root, jsonlstore.CatalogDir)))
	r = sessions(t, nil, "--dir", root, "ls", "--time-format", "rfc3339")
	require.Equal(t, exitOK, r.Code, r.String())
	for _, id := range []string{"p1-parser", "p2-tool", "p3-notes", "p4-bare"} {
		require.Contains(t, r.Stdout, id)
	}
	require.Equal(t, 5, strings.Count(r.Stdout, "\n"), r.Stdout)
	r = sessions(t, nil, "--dir", t.TempDir(), "reindex")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Equal(t, "catalog: 0 sessions\nsearch index: 0 sessions indexed\n", r.Stdout)
}
