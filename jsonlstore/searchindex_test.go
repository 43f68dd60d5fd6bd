package jsonlstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/session"
)

// The search tests (search_*_test.go) run the search index through the
// store, as fts.New() does: jsonlstore/fts imports this package, so its
// tests use the index's package itself (searchindex.New() is what
// fts.New() returns).

// The index's paths in the root (package searchindex keeps them).
const (
	searchFile = SearchDir + "/index.db"
	searchLock = SearchDir + "/lock"
	// searchManyStale is searchindex's manyStale: how many sessions a
	// search brings into the index before the Logger hears that the
	// index is being built.
	searchManyStale = 64
)

// withSearch is opts with the search index.
func withSearch(opts Options) Options {
	opts.Search = searchindex.New()
	return opts
}

// indexOf is the search index of st, opened with searchindex.New().
func indexOf(st *Store) *searchindex.Index { return st.search.(*searchindex.Index) }

// TestSearchWithoutTheIndex: a store opened without a search index
// answers every search method with ErrNoSearch (errors.ErrUnsupported
// too), whose message says how to open it with one; Open refuses a
// SearchIndex that is not the index.
func TestSearchWithoutTheIndex(t *testing.T) {
	ctx := context.Background()
	st, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "anything"})
	require.ErrorIs(t, err, ErrNoSearch)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.Contains(t, err.Error(), "jsonlstore.Options{Search: fts.New()}")
	require.Contains(t, err.Error(), "github.com/sessionstore/sessionstore/jsonlstore/fts")
	_, err = sessionstore.Search(ctx, st, sessionstore.SearchQuery{Text: "anything"})
	require.ErrorIs(t, err, ErrNoSearch)
	_, err = st.ReindexSearch(ctx)
	require.ErrorIs(t, err, ErrNoSearch)
	_, err = st.VerifySearch(ctx)
	require.ErrorIs(t, err, ErrNoSearch)
	require.ErrorIs(t, st.FlushSearch(ctx), ErrNoSearch)
	_, err = os.Lstat(filepath.Join(st.Dir(), SearchDir))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing of the index made")

	_, err = Open(t.TempDir(), Options{Search: notAnIndex{}})
	require.ErrorIs(t, err, ErrNoSearch)
	require.Contains(t, err.Error(), "notAnIndex")
	require.NoError(t, st.Close())
	_, err = st.Search(ctx, sessionstore.SearchQuery{Text: "anything"})
	require.ErrorIs(t, err, sessionstore.ErrClosed, "closed comes first")
}

type notAnIndex struct{}

func (notAnIndex) SearchIndexName() string { return "not an index" }

// TestSearchFindsWhatWasWrittenWithoutTheIndex: sessions created,
// appended and deleted through a store opened without the search index
// — before the index exists, and after it holds them — are searched as
// they are by a store opened with it.
func TestSearchFindsWhatWasWrittenWithoutTheIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plain, err := Open(dir, Options{})
	require.NoError(t, err)
	defer plain.Close()
	write := func(id session.SessionID, texts ...string) {
		t.Helper()
		s := sessiontest.New(string(id))
		for _, text := range texts {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, text, sessiontest.Epoch)))
		}
		w, err := plain.Acquire(ctx, id, sessionstore.AcquireOptions{})
		if errors.Is(err, sessionstore.ErrNotFound) {
			w, err = plain.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
			require.NoError(t, err)
		} else {
			require.NoError(t, err)
			_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
		}
		require.NoError(t, w.Release(ctx))
	}
	write("a", "an ocelot prowls")
	write("b", "a narwhal sings")
	write("a", "an ocelot prowls", "then a kestrel hovers")

	st, err := Open(dir, withSearch(Options{}))
	require.NoError(t, err)
	defer st.Close()
	verifyAtCleanup(t, st)
	search := func(text string) []hitKey {
		t.Helper()
		res, err := st.Search(ctx, sessionstore.SearchQuery{Text: text})
		require.NoError(t, err)
		return hitKeys(res.Hits)
	}
	require.Equal(t, []hitKey{{"a", "text", 1, 2}}, search("kestrel"), "the index built from the logs")
	require.Equal(t, []hitKey{{"b", "text", 0, 1}}, search("narwhal"))

	// Now the index holds them: what the plain store writes next is
	// still found, and a session it deletes is gone.
	write("b", "a narwhal sings", "and a lynx listens")
	write("c", "a wombat digs")
	w, err := plain.Acquire(ctx, "a", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx))
	require.Equal(t, []hitKey{{"b", "text", 1, 2}}, search("lynx"))
	require.Equal(t, []hitKey{{"c", "text", 0, 1}}, search("wombat"))
	require.Empty(t, search("kestrel"), "deleted without the index")
	rep, err := st.VerifySearch(ctx)
	require.NoError(t, err)
	require.Equal(t, SearchIndexSound, rep.State)
	require.Equal(t, 2, rep.Sessions)
}

// TestOpenLinksNoSQLite: a program that opens a directory store and
// appends, without the search index, links no SQLite (issue 26 item 4):
// `go list -deps` of testdata/nosearch names no modernc.org package,
// while the same program opened with fts does.
func TestOpenLinksNoSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	deps := func(pkg string) []string {
		t.Helper()
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		require.NoError(t, err, "go list -deps %s", pkg)
		return strings.Fields(string(out))
	}
	sqlite := func(pkgs []string) []string {
		var out []string
		for _, p := range pkgs {
			if strings.HasPrefix(p, "modernc.org/") {
				out = append(out, p)
			}
		}
		return out
	}
	plain := deps("./testdata/nosearch")
	require.Contains(t, plain, "github.com/sessionstore/sessionstore/jsonlstore")
	require.Empty(t, sqlite(plain), "a store opened without fts links SQLite")
	require.NotEmpty(t, sqlite(deps("./fts")), "fts links SQLite (the check has teeth)")
}
