package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
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
		Catalog  maintenance.CatalogVerifyReport
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stdout)
	require.Len(t, rep.Sessions, 4)
	require.Equal(t, maintenance.CatalogCurrent, rep.Catalog.State)

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
	require.Equal(t, maintenance.CatalogDamaged, rep.Catalog.State)
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
		Catalog maintenance.CatalogReport
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

// TestReindexSetsAsideCatalogDamage: what stands where the catalog keeps
// its directory, lock, marks, file or root file but is not of the kind it
// keeps there (a FIFO, a symlink, a file for a directory, a directory for
// a file) is a problem for verify (exit 3, not an error: exit 1); ls
// still lists every session; reindex sets it aside, unfollowed and
// undeleted, and rebuilds the catalog, after which verify is clean.
func TestReindexSetsAsideCatalogDamage(t *testing.T) {
	cases := map[string]struct {
		name, what string
		plant      func(t *testing.T, path string)
	}{
		"lock FIFO":        {"lock", "a FIFO", mkfifo},
		"lock directory":   {"lock", "a directory", mkdir},
		"lock symlink":     {"lock", "a symlink", symlink},
		"marks file":       {"marks", "a regular file", writeFile},
		"marks FIFO":       {"marks", "a FIFO", mkfifo},
		"marks symlink":    {"marks", "a symlink", symlink},
		"catalog FIFO":     {"catalog", "a FIFO", mkfifo},
		"catalog symlink":  {"catalog", "a symlink", symlink},
		"root directory":   {"root", "a directory", mkdir},
		"directory FIFO":   {"", "a FIFO", mkfifo},
		"directory file":   {"", "a regular file", writeFile},
		"directory link":   {"", "a symlink", symlink},
		"several at once":  {"lock+marks", "a FIFO", nil},
		"junk beside them": {"junk", "", nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root, _ := projectsStore(t)
			require.Equal(t, exitOK, sessions(t, nil, "--dir", root, "ls").Code) // writes the catalog
			dir := filepath.Join(root, jsonlstore.CatalogDir)
			path := filepath.Join(dir, c.name)
			want := ".catalog/" + c.name + " is " + c.what + ":"
			switch c.name {
			case "":
				path, want = dir, ".catalog is "+c.what+", not the catalog's directory"
				require.NoError(t, os.RemoveAll(dir))
				c.plant(t, path)
			case "lock+marks":
				require.NoError(t, os.Remove(filepath.Join(dir, "lock")))
				mkfifo(t, filepath.Join(dir, "lock"))
				require.NoError(t, os.RemoveAll(filepath.Join(dir, "marks")))
				writeFile(t, filepath.Join(dir, "marks"))
				want = ".catalog/marks is a regular file:"
			case "junk":
				mkfifo(t, filepath.Join(dir, "a-fifo"))
				symlink(t, filepath.Join(dir, "a-link"))
				mkdir(t, filepath.Join(dir, "a-dir"))
				want = ""
			default:
				require.NoError(t, os.RemoveAll(path))
				c.plant(t, path)
			}

			r := sessions(t, nil, "--dir", root, "verify")
			if want == "" {
				require.Equal(t, exitOK, r.Code, "what the catalog does not name is left alone: %s", r.String())
			} else {
				require.Equal(t, exitCorrupt, r.Code, r.String())
				require.Contains(t, r.Stdout, "catalog: DAMAGED")
				require.Contains(t, r.Stdout, "  problem: "+want)
			}
			r = sessions(t, nil, "--dir", root, "ls")
			require.Equal(t, exitOK, r.Code, r.String())
			require.Len(t, strings.Split(strings.TrimSpace(r.Stdout), "\n"), 5, "a header and every session: %s", r.Stdout)

			r = sessions(t, nil, "--dir", root, "reindex")
			require.Equal(t, exitOK, r.Code, r.String())
			require.Contains(t, r.Stdout, "catalog: 4 sessions")
			if want != "" {
				require.Contains(t, r.Stdout, "catalog: set aside .catalog")
			}
			r = sessions(t, nil, "--dir", root, "verify")
			require.Equal(t, exitOK, r.Code, r.String())
			require.Contains(t, r.Stdout, "catalog: current (4 entries, 4 checked against their logs)")
		})
	}
}

func mkfifo(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o600)) }

func mkdir(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o700)) }

func writeFile(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, []byte("x"), 0o600)) }

// symlink plants a link to a file outside the store, which must be as it
// was when the test ends: nothing writes through the link.
func symlink(t *testing.T, path string) {
	target := filepath.Join(t.TempDir(), "link-target")
	require.NoError(t, os.WriteFile(target, []byte("not the store's"), 0o600))
	require.NoError(t, os.Symlink(target, path))
	t.Cleanup(func() {
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, "not the store's", string(b), "nothing is written through the link")
	})
}
