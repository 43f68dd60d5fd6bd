package jsonlstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/searchtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

var searchVocab = []string{"amber", "basil", "cedar", "dune", "ember", "fjord", "grove", "heron", "iris", "juniper", "amberjack", "cedars"}

// searchWorkload builds n sessions in st whose conversations grow by
// random messages of searchVocab over a few revisions each, and returns
// the queries to compare.
func searchWorkload(t *testing.T, st *Store, seed uint64, n int) []sessionstore.SearchQuery {
	t.Helper()
	ctx := t.Context()
	r := rand.New(rand.NewPCG(seed, 5))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = searchVocab[r.IntN(len(searchVocab))]
		}
		return strings.Join(w, " ")
	}
	for i := range n {
		s := sessiontest.New(fmt.Sprintf("s%d-%03d", seed, i))
		require.NoError(t, s.SetTitle(words(2), session.TitleGenerated))
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, words(1+r.IntN(6)), sessiontest.Epoch)))
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		for range r.IntN(4) {
			for range 1 + r.IntN(2) {
				require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, words(1+r.IntN(10)), sessiontest.Epoch)))
			}
			_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
		}
		require.NoError(t, w.Release(ctx))
	}
	var qs []sessionstore.SearchQuery
	for range 6 {
		q := sessionstore.SearchQuery{Limit: sessionstore.MaxSearchLimit}
		switch r.IntN(3) {
		case 0:
			q.Text = searchVocab[r.IntN(len(searchVocab))]
		case 1:
			q.Text = `"` + words(2) + `"`
		default:
			q.Text = searchVocab[r.IntN(len(searchVocab))][:3] + "*"
		}
		qs = append(qs, q)
	}
	return qs
}

type hitKey struct {
	ID       session.SessionID
	Field    string
	Message  int
	Revision uint64
}

func hitKeys(hits []sessionstore.SearchHit) []hitKey {
	out := make([]hitKey, len(hits))
	for i, h := range hits {
		out[i] = hitKey{h.ID, h.Field, h.Message, h.Revision}
	}
	slices.SortFunc(out, func(a, b hitKey) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Message, b.Message), cmp.Compare(a.Field, b.Field))
	})
	return out
}

// requireSameAsHistory runs every query on st and requires the hits that
// reading the histories gives; it returns the sessions the searches
// indexed first.
func requireSameAsHistory(t *testing.T, st *Store, qs []sessionstore.SearchQuery, what string) int {
	t.Helper()
	indexed := 0
	for _, q := range qs {
		want, err := searchtest.Reference(t.Context(), st, q)
		require.NoError(t, err)
		got, err := st.Search(t.Context(), q)
		require.NoError(t, err)
		require.Equal(t, hitKeys(want.Hits), hitKeys(got.Hits), "%s: search %s", what, q.Text)
		indexed += got.Indexed
	}
	return indexed
}

// TestSearchIndexLostOrDamaged: whatever happens to the index file — it
// is deleted (with or without its -wal), cut short, overwritten, of
// another version — a search answers as the histories do, indexing the
// sessions again, and says the index is being built when many need it.
func TestSearchIndexLostOrDamaged(t *testing.T) {
	damage := []struct {
		name string
		do   func(t *testing.T, root string)
	}{
		{"deleted", func(t *testing.T, root string) { require.NoError(t, os.RemoveAll(filepath.Join(root, SearchDir))) }},
		{"file deleted, wal left", func(t *testing.T, root string) { require.NoError(t, os.Remove(filepath.Join(root, searchFile))) }},
		{"cut short", func(t *testing.T, root string) {
			p := filepath.Join(root, searchFile)
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, fi.Size()/2))
			_ = os.Remove(p + "-wal")
		}},
		{"overwritten", func(t *testing.T, root string) {
			require.NoError(t, os.WriteFile(filepath.Join(root, searchFile), bytes.Repeat([]byte("not a database "), 300), 0o600))
		}},
		{"another version", func(t *testing.T, root string) {
			db, err := sql.Open("sqlite", filepath.Join(root, searchFile))
			require.NoError(t, err)
			_, err = db.Exec("PRAGMA user_version = 99")
			require.NoError(t, err)
			require.NoError(t, db.Close())
		}},
	}
	for i, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			var logs bytes.Buffer
			st := openTestStoreWith(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			qs := searchWorkload(t, st, uint64(i), 12)
			requireSameAsHistory(t, st, qs, "before")
			// Another handle (another process's view): its index handle
			// opens the file as it is now.
			require.NoError(t, st.Close())
			d.do(t, st.Dir())
			st2, err := Open(st.Dir(), Options{Search: searchindex.New(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			defer st2.Close()
			indexed := requireSameAsHistory(t, st2, qs, "after")
			require.Equal(t, 12, indexed, "every session indexed again, once")
			require.Zero(t, requireSameAsHistory(t, st2, qs, "again"), "the index is current now")
		})
	}
	t.Run("many sessions: being built", func(t *testing.T) {
		var logs bytes.Buffer
		st := openTestStoreWith(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		qs := searchWorkload(t, st, 99, searchManyStale+2)
		require.NoError(t, os.RemoveAll(filepath.Join(st.Dir(), SearchDir)))
		require.Equal(t, searchManyStale+2, requireSameAsHistory(t, st, qs[:1], "rebuilt"))
		require.Contains(t, logs.String(), "search index is being built")
	})
}

// TestSearchSeesEveryChangeOfTheLog: a session appended by a program that
// does not index (another store handle whose queue never reaches the
// index: here, written before the index existed), compacted (a new log
// file) or deleted behind the index's back is searched as it is.
func TestSearchSeesEveryChangeOfTheLog(t *testing.T) {
	ctx := t.Context()
	st := openTestStore(t)
	qs := searchWorkload(t, st, 7, 6)
	requireSameAsHistory(t, st, qs, "first")

	// Compaction replaces the logs of two sessions.
	for _, id := range []session.SessionID{"s7-000", "s7-001"} {
		_, err := st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: 1}, 0)
		require.NoError(t, err)
	}
	requireSameAsHistory(t, st, qs, "compacted")

	// Another handle, opened without the search index, deletes one;
	// this one's index still has its row.
	other, err := Open(st.Dir(), Options{})
	require.NoError(t, err)
	w, err := other.Acquire(ctx, "s7-002", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx))
	require.NoError(t, other.Close())
	requireSameAsHistory(t, st, qs, "deleted elsewhere")

	// A session appended by a handle that does not index (opened
	// without the search index).
	other, err = Open(st.Dir(), Options{})
	require.NoError(t, err)
	w, err = other.Acquire(ctx, "s7-003", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := other.Load(ctx, "s7-003")
	require.NoError(t, err)
	s, err := rec.Session()
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, "zebrafish juniper", sessiontest.Epoch)))
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, other.Close())
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "zebrafish"})
	require.NoError(t, err)
	require.Equal(t, []hitKey{{"s7-003", "text", s.MessageCount() - 1, rec.Revision + 1}}, hitKeys(res.Hits))
	require.Equal(t, 1, res.Indexed)
	requireSameAsHistory(t, st, qs, "appended elsewhere")
}

// TestSearchSymlinkedDirectoryIsNoSession: a symlink in the root to a
// session's directory is no session for a search, as for a listing (the
// probe of its log may follow it; the directory check does not), and a
// session moved away and replaced by such a link is no longer found.
func TestSearchSymlinkedDirectoryIsNoSession(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("a", "zanzibarite in the title")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, st.FlushSearch(ctx))
	q := sessionstore.SearchQuery{Text: "zanzibarite"}
	res, err := st.Search(ctx, q)
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)

	require.NoError(t, os.Symlink("a", filepath.Join(st.Dir(), "b")))
	res, err = st.Search(ctx, q)
	require.NoError(t, err)
	require.Len(t, res.Hits, 1, "b is a link, no session")
	require.Equal(t, session.SessionID("a"), res.Hits[0].ID)
	require.Empty(t, res.Unreadable)
	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)

	elsewhere := filepath.Join(t.TempDir(), "a")
	require.NoError(t, os.Remove(filepath.Join(st.Dir(), "b")))
	require.NoError(t, os.Rename(filepath.Join(st.Dir(), "a"), elsewhere))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(st.Dir(), "a")))
	res, err = st.Search(ctx, q)
	require.NoError(t, err)
	require.Empty(t, res.Hits, "a session moved out of the root is not searched through a link")
}
