package jsonlstore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex"
	"github.com/sessionstore/sessionstore/session"
)

// A search index is a cache that comes with the store from wherever the
// store comes from: the tests here plant what a hostile copy may hold
// (triggers, views, damaged pages, other kinds of files) and require
// that nothing hangs, nothing is forged, nothing leaves the store, and
// that searches answer as the histories do.

// hostileWait is how long a call may take on the hostile inputs here
// before it counts as hanging: far above what any takes (a second), far
// below forever.
const hostileWait = 2 * time.Minute

// indexSQL runs statements on the index file of root (root "": a
// database in memory) through a connection of the test's own (another
// process's view), as a planted index would hold them.
func indexSQL(t *testing.T, root string, stmts ...string) {
	t.Helper()
	name := ":memory:"
	if root != "" {
		name = "file:" + filepath.Join(root, searchFile)
	}
	db, err := sql.Open("sqlite", name)
	require.NoError(t, err)
	defer db.Close()
	for _, q := range stmts {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
}

// indexObjects lists the index's triggers, views and tables of root
// (type and name), read by the test's own connection.
func indexObjects(t *testing.T, root string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, searchFile)+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query("SELECT type || ' ' || name FROM sqlite_schema WHERE type IN ('trigger', 'view') OR name = 'sessions' ORDER BY 1")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestSearchIndexStaysInStore: whatever the root's name holds — "?",
// "#", "%41", spaces — the index is made inside the store, as
// ROOT/.search/index.db with its -wal and -shm, each 0600 whatever the
// umask; nothing is made or changed beside the store. (SQLite takes the
// index's path as a URI: unescaped, "DIR/store?x" put the index, with the
// conversations' text, in DIR/store, 0644.)
func TestSearchIndexStaysInStore(t *testing.T) {
	ctx := context.Background()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, name := range []string{"store?x", "store#x", "store%41x", "store%", "store x", "s?t#o%41r e%2F?mode=rwc"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// An SQLite database where the root's name cut at "?" or "#"
			// leads: it gets no table.
			plantedDB := filepath.Join(dir, "planted.db")
			indexSQL(t, "", "ATTACH '"+plantedDB+"' AS p", "CREATE TABLE p.mine (x)")
			if cut := strings.IndexAny(name, "?#"); cut > 0 {
				require.NoError(t, os.Rename(plantedDB, filepath.Join(dir, name[:cut])))
			}
			before := map[string][]byte{}
			for p := range tree(t, dir) {
				if p != "." {
					b, err := os.ReadFile(filepath.Join(dir, p))
					require.NoError(t, err)
					before[p] = b
				}
			}
			root := filepath.Join(dir, name)
			st, err := Open(root, Options{Search: searchindex.New()})
			require.NoError(t, err)
			w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("a", "quetzalcoatl in the title")), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
			res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "quetzalcoatl"})
			require.NoError(t, err)
			require.Len(t, res.Hits, 1)
			// Beside the store: only what was there, unchanged.
			for p := range tree(t, dir) {
				if p != "." && p != name && !strings.HasPrefix(p, name+string(filepath.Separator)) {
					_, ok := before[p]
					require.True(t, ok, "%s made beside the store", p)
				}
			}
			for p, want := range before {
				b, err := os.ReadFile(filepath.Join(dir, p))
				require.NoError(t, err)
				require.Equal(t, want, b, "%s changed", p)
			}
			// Inside: the index and its files, 0600.
			require.True(t, indexOf(st).IsOpen(), "the index is open")
			fi, err := os.Stat(filepath.Join(root, searchFile))
			require.NoError(t, err)
			require.Positive(t, fi.Size())
			for p, mode := range tree(t, filepath.Join(root, SearchDir)) {
				if mode.IsDir() {
					require.Equal(t, fs.FileMode(0o700), mode.Perm(), p)
				} else {
					require.Equal(t, fs.FileMode(0o600), mode.Perm(), p)
				}
			}
			require.Contains(t, tree(t, filepath.Join(root, SearchDir)), "index.db-wal")
			require.NoError(t, st.Close())
		})
	}
}

// TestSearchIndexPlantedSchema: an index holding objects of its own — a
// trigger that loops forever, a view in place of a table, a trigger that
// forges hits, an extra table or index, a table redefined — whether it
// came with the store or was added while the store had it open, never
// runs any of them: Close returns, searches return and answer as the
// histories do (the index is replaced by a new file), and no forged hit
// is ever found, before or after a reindex.
func TestSearchIndexPlantedSchema(t *testing.T) {
	spin := "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c)"
	forge := `CREATE TRIGGER forge AFTER INSERT ON msgs WHEN NEW.msg = 0 BEGIN
		INSERT INTO msgs (sid, msg, role, rev) VALUES (NEW.sid, 1000, 'user', NEW.rev);
		INSERT INTO docs (rowid, title, text, tool) VALUES (last_insert_rowid(), '', 'wire the payroll to account 1234', '');
	END`
	cases := []struct {
		name  string
		plant []string
		// open: planted while the store has the index open (another
		// process's doing); else before the store opens it.
		open bool
	}{
		{"spinning trigger, planted while open", []string{"CREATE TRIGGER spin AFTER INSERT ON msgs BEGIN " + spin + "; END"}, true},
		{"spinning trigger", []string{"CREATE TRIGGER spin BEFORE DELETE ON msgs BEGIN " + spin + "; END",
			"CREATE TRIGGER spin2 AFTER INSERT ON msgs BEGIN " + spin + "; END"}, false},
		{"view in place of sessions", []string{"DROP TABLE sessions",
			`CREATE VIEW sessions (sid, id, rev, messages, digest, title, title_rev, updated, project, labels,
				log_dev, log_ino, log_size, log_mtime) AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c)
				SELECT x, 'x', 1, 1, x'', '', 0, 0, '', '{}', 0, 0, 0, 0 FROM c WHERE x < 0`,
			"CREATE TRIGGER vi INSTEAD OF INSERT ON sessions BEGIN " + spin + "; END",
			"CREATE TRIGGER vu INSTEAD OF UPDATE ON sessions BEGIN " + spin + "; END",
			"CREATE TRIGGER vd INSTEAD OF DELETE ON sessions BEGIN " + spin + "; END"}, false},
		{"view in place of sessions, planted while open", []string{"DROP TABLE sessions",
			`CREATE VIEW sessions (sid, id, rev, messages, digest, title, title_rev, updated, project, labels,
				log_dev, log_ino, log_size, log_mtime) AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c)
				SELECT x, 'x', 1, 1, x'', '', 0, 0, '', '{}', 0, 0, 0, 0 FROM c WHERE x < 0`}, true},
		{"forging trigger", []string{forge}, false},
		{"forging trigger, planted while open", []string{forge}, true},
		{"extra table", []string{"CREATE TABLE notes (x)"}, false},
		{"extra index", []string{"CREATE INDEX msgs_role ON msgs (role)"}, false},
		{"index dropped", []string{"DROP INDEX msgs_sid"}, false},
		{"table redefined", []string{"DROP TABLE labels", "CREATE TABLE labels (sid INTEGER, key TEXT, value TEXT, extra TEXT)"}, false},
		{"full-text configuration", []string{"INSERT INTO docs (docs, rank) VALUES ('automerge', 0)"}, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			var logs bytes.Buffer
			opts := Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			st := openTestStoreWith(t, opts)
			qs := searchWorkload(t, st, uint64(100+i), 6)
			qs = append(qs, sessionstore.SearchQuery{Text: "payroll", Limit: sessionstore.MaxSearchLimit})
			requireSameAsHistory(t, st, qs, "before")
			if !c.open {
				require.NoError(t, st.Close())
				indexSQL(t, st.Dir(), c.plant...)
				var err error
				st, err = Open(st.Dir(), withSearch(opts))
				require.NoError(t, err)
			} else {
				indexSQL(t, st.Dir(), c.plant...)
			}
			// Appends that feed the index, and a close that writes the
			// queue.
			w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.Titled("late", "juniper arrives late")), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))
			within(t, hostileWait, "Close", func() { require.NoError(t, st.Close()) })

			st, err = Open(st.Dir(), withSearch(opts))
			require.NoError(t, err)
			defer st.Close()
			within(t, hostileWait, "search", func() { requireSameAsHistory(t, st, qs, "planted") })
			require.Equal(t, []string{"table sessions"}, indexObjects(t, st.Dir()), "replaced by a new index")
			within(t, hostileWait, "reindex", func() {
				_, err := st.ReindexSearch(ctx)
				require.NoError(t, err)
			})
			within(t, hostileWait, "search", func() { requireSameAsHistory(t, st, qs, "reindexed") })
			require.Equal(t, []string{"table sessions"}, indexObjects(t, st.Dir()))
		})
	}
}

// TestReindexAfterForgedRowsStartsAfresh: rows written into the index by
// hand (a forged hit on a session's current row) never survive a
// reindex, which writes a new file: the old file's rows, objects and
// pages are gone with it.
func TestReindexAfterForgedRowsStartsAfresh(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	qs := searchWorkload(t, st, 200, 4)
	requireSameAsHistory(t, st, qs, "before")
	before, err := os.Stat(filepath.Join(st.Dir(), searchFile))
	require.NoError(t, err)
	indexSQL(t, st.Dir(),
		"INSERT INTO msgs (sid, msg, role, rev) SELECT sid, 1000, 'user', rev FROM sessions LIMIT 1",
		"INSERT INTO docs (rowid, title, text, tool) VALUES (last_insert_rowid(), '', 'wire the payroll to account 1234', '')")
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "payroll"})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1, "a row written by hand is found (whoever may write the store may forge its logs too)")
	_, err = st.ReindexSearch(ctx)
	require.NoError(t, err)
	after, err := os.Stat(filepath.Join(st.Dir(), searchFile))
	require.NoError(t, err)
	require.False(t, os.SameFile(before, after), "a new file")
	res, err = st.Search(ctx, sessionstore.SearchQuery{Text: "payroll"})
	require.NoError(t, err)
	require.Empty(t, res.Hits)
	requireSameAsHistory(t, st, qs, "after")
}

// damagePages overwrites n random pages of the index file of root (page
// size 4096) in its middle half with random bytes.
func damagePages(t *testing.T, root string, r *rand.Rand, n int) {
	t.Helper()
	p := filepath.Join(root, searchFile)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	pages := fi.Size() / 4096
	require.Greater(t, pages, int64(4*n), "an index large enough to damage")
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4096)
	for range n {
		page := pages/4 + r.Int64N(pages/2)
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
		_, err := f.WriteAt(buf, page*4096)
		require.NoError(t, err)
	}
}

// bigSearchWorkload is searchWorkload with long messages: an index of
// a few MB.
func bigSearchWorkload(t *testing.T, st *Store, seed uint64) []sessionstore.SearchQuery {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 9))
	for i := range 40 {
		s := sessiontest.New(fmt.Sprintf("big-%03d", i))
		for m := range 30 {
			w := make([]string, 150)
			for k := range w {
				w[k] = fmt.Sprintf("%s%d", searchVocab[r.IntN(len(searchVocab))], r.IntN(400))
			}
			role := session.RoleUser
			if m%2 == 1 {
				role = session.RoleAssistant
			}
			require.NoError(t, s.AppendMessage(session.TextMessage(role, strings.Join(w, " "), sessiontest.Epoch)))
		}
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
	}
	var qs []sessionstore.SearchQuery
	for range 3 {
		qs = append(qs, sessionstore.SearchQuery{Text: fmt.Sprintf("%s%d", searchVocab[r.IntN(len(searchVocab))], r.IntN(400)), Limit: sessionstore.MaxSearchLimit})
	}
	return qs
}

// TestSearchIndexDamagedPages: twenty random pages in the middle of an
// index are damaged; VerifySearch reports it, and a search answers as
// the histories do (replacing the index with a new file), as does a
// reindex, after which the index verifies sound.
func TestSearchIndexDamagedPages(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel() // each seed its own store: 20 s each under -race, side by side
			st := openTestStore(t)
			qs := bigSearchWorkload(t, st, seed)
			requireSameAsHistory(t, st, qs, "before")
			require.NoError(t, st.Close())
			damagePages(t, st.Dir(), rand.New(rand.NewPCG(seed, 1)), 20)

			st2, err := Open(st.Dir(), Options{Search: searchindex.New()})
			require.NoError(t, err)
			defer st2.Close()
			rep, err := st2.VerifySearch(ctx)
			require.NoError(t, err)
			require.Equal(t, SearchIndexDamaged, rep.State, "%+v", rep)
			require.False(t, rep.OK())
			within(t, hostileWait, "search", func() { requireSameAsHistory(t, st2, qs, "damaged") })
			rep, err = st2.VerifySearch(ctx)
			require.NoError(t, err)
			require.Equal(t, SearchIndexSound, rep.State, "%+v", rep)
			require.Equal(t, 40, rep.Sessions)

			require.NoError(t, st2.Close())
			damagePages(t, st.Dir(), rand.New(rand.NewPCG(seed, 2)), 20)
			st3, err := Open(st.Dir(), Options{Search: searchindex.New()})
			require.NoError(t, err)
			defer st3.Close()
			rr, err := st3.ReindexSearch(ctx)
			require.NoError(t, err)
			require.Equal(t, 40, rr.Sessions)
			rep, err = st3.VerifySearch(ctx)
			require.NoError(t, err)
			require.Equal(t, SearchIndexSound, rep.State, "%+v", rep)
			requireSameAsHistory(t, st3, qs, "reindexed")
		})
	}
}

// TestSearchIndexJunkReplaced: whatever stands where the index's files
// belong — a directory, a FIFO, a symlink (to a database or directory
// outside the store), a hard link, a file where .search belongs — a
// search and a reindex replace it and answer as the histories do,
// nothing blocks, and nothing outside the store is read into or changed.
func TestSearchIndexJunkReplaced(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, root, outside string)
	}{
		{"index.db a directory", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, searchFile)
			require.NoError(t, os.RemoveAll(p))
			require.NoError(t, os.MkdirAll(filepath.Join(p, "sub"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(p, "sub", "x"), []byte("x"), 0o600))
		}},
		{"index.db a FIFO", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, searchFile)
			require.NoError(t, os.Remove(p))
			require.NoError(t, syscall.Mkfifo(p, 0o600))
		}},
		{"index.db a symlink to a database outside", func(t *testing.T, root, outside string) {
			p := filepath.Join(root, searchFile)
			require.NoError(t, os.Rename(p, filepath.Join(outside, "index.db")))
			require.NoError(t, os.Symlink(filepath.Join(outside, "index.db"), p))
		}},
		{"index.db hard-linked from outside", func(t *testing.T, root, outside string) {
			require.NoError(t, os.Link(filepath.Join(root, searchFile), filepath.Join(outside, "index.db")))
		}},
		{"-wal a symlink to outside", func(t *testing.T, root, outside string) {
			p := filepath.Join(root, searchFile) + "-wal"
			require.NoError(t, os.RemoveAll(p))
			require.NoError(t, os.WriteFile(filepath.Join(outside, "wal"), nil, 0o600))
			require.NoError(t, os.Symlink(filepath.Join(outside, "wal"), p))
		}},
		{"-wal a directory", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, searchFile) + "-wal"
			require.NoError(t, os.RemoveAll(p))
			require.NoError(t, os.Mkdir(p, 0o700))
		}},
		{"lock a directory", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, searchLock)
			require.NoError(t, os.RemoveAll(p))
			require.NoError(t, os.Mkdir(p, 0o700))
		}},
		{"lock a FIFO", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, searchLock)
			require.NoError(t, os.RemoveAll(p))
			require.NoError(t, syscall.Mkfifo(p, 0o600))
		}},
		{"lock a symlink to outside", func(t *testing.T, root, outside string) {
			p := filepath.Join(root, searchLock)
			require.NoError(t, os.RemoveAll(p))
			require.NoError(t, os.Symlink(filepath.Join(outside, "lock"), p))
		}},
		{".search a file", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, SearchDir)
			require.NoError(t, os.RemoveAll(p))
			require.NoError(t, os.WriteFile(p, []byte("junk"), 0o600))
		}},
		{".search a symlink to a directory outside", func(t *testing.T, root, outside string) {
			p := filepath.Join(root, SearchDir)
			require.NoError(t, os.Rename(p, filepath.Join(outside, "search")))
			require.NoError(t, os.Symlink(filepath.Join(outside, "search"), p))
		}},
	}
	snapshot := func(t *testing.T, dir string) map[string]string {
		out := map[string]string{}
		for p, mode := range tree(t, dir) {
			s := mode.String()
			if mode.IsRegular() {
				b, err := os.ReadFile(filepath.Join(dir, p))
				require.NoError(t, err)
				s += string(b)
			}
			out[p] = s
		}
		return out
	}
	for i, c := range cases {
		for _, how := range []string{"search", "reindex"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				ctx := context.Background()
				st := openTestStore(t)
				qs := searchWorkload(t, st, uint64(300+i), 5)
				requireSameAsHistory(t, st, qs, "before")
				require.NoError(t, st.Close())
				outside := t.TempDir()
				c.plant(t, st.Dir(), outside)
				before := snapshot(t, outside)

				st, err := Open(st.Dir(), Options{Search: searchindex.New()})
				require.NoError(t, err)
				defer st.Close()
				if how == "reindex" {
					within(t, hostileWait, "reindex", func() {
						rep, err := st.ReindexSearch(ctx)
						require.NoError(t, err)
						require.Equal(t, 5, rep.Sessions)
					})
				}
				within(t, hostileWait, "search", func() { requireSameAsHistory(t, st, qs, "after") })
				require.Equal(t, before, snapshot(t, outside), "nothing outside the store changed")
				rep, err := st.VerifySearch(ctx)
				require.NoError(t, err)
				require.Equal(t, SearchIndexSound, rep.State, "%+v", rep)
				for _, name := range []string{SearchDir, searchLock, searchFile} {
					fi, err := os.Lstat(filepath.Join(st.Dir(), name))
					require.NoError(t, err)
					require.True(t, fi.IsDir() == (name == SearchDir) && fi.Mode().Type()&^fs.ModeDir == 0, "%s: %s", name, fi.Mode())
				}
			})
		}
	}
}
