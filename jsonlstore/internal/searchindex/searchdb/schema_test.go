package searchdb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
)

// newIndex makes a new index file in dir and returns its path.
func newIndex(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "index.db")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	db, err := Open(context.Background(), p, OpenOptions{Create: true})
	require.NoError(t, err)
	q, _ := fulltext.Parse("amber")
	_, err = db.Apply(context.Background(), []Update{{ID: "a", Reset: true, Rev: 1, Messages: 1, Title: "t",
		Add: []Message{{Index: 0, Rev: 1, Doc: fulltext.Doc{Role: session.RoleUser, Text: "amber basil"}}}}}, NoWait)
	require.NoError(t, err)
	hits, err := db.Search(context.Background(), q, Filter{}, 10)
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.NoError(t, db.Close())
	return p
}

// rawURI is the URI of the file at p for a connection of the test's own,
// with query (no check, no setup).
func rawURI(t testing.TB, p, query string) string {
	u, err := URI(p)
	require.NoError(t, err)
	base, _, _ := strings.Cut(u, "?")
	return base + query
}

// plant runs statements on the file at p through a connection that
// checks nothing and may write the schema directly.
func plant(t testing.TB, p string, stmts string) error {
	t.Helper()
	db, err := sql.Open("sqlite", rawURI(t, p, ""))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	// Bounded: the statements may be a query that never ends.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, "PRAGMA writable_schema = ON; "+stmts)
	return err
}

// plantedSchemas are what a hostile copy may hold: each makes the index
// fail its check.
var plantedSchemas = []struct{ name, sql string }{
	{"trigger", "CREATE TRIGGER t AFTER INSERT ON msgs BEGIN SELECT 1; END"},
	{"temp-looking trigger", "CREATE TRIGGER IF NOT EXISTS spin BEFORE UPDATE ON sessions BEGIN SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c); END"},
	{"view", "CREATE VIEW v AS SELECT * FROM sessions"},
	{"view for a table", "DROP TABLE sessions; CREATE VIEW sessions AS SELECT 1 AS sid"},
	{"extra table", "CREATE TABLE extra (x)"},
	{"extra index", "CREATE INDEX extra ON msgs (role)"},
	{"dropped index", "DROP INDEX labels_kv"},
	{"redefined table", "DROP TABLE msgs; CREATE TABLE msgs (rowid INTEGER PRIMARY KEY, sid INTEGER, msg INTEGER, role TEXT, rev INTEGER, x DEFAULT (random()))"},
	{"schema text rewritten", "UPDATE sqlite_schema SET sql = replace(sql, 'NOT NULL', 'NOT NULL ') WHERE name = 'labels'"},
	{"version", "PRAGMA user_version = 7"},
	{"fts configuration", "INSERT INTO docs (docs, rank) VALUES ('pgsz', 64)"},
	{"second fts table", "CREATE VIRTUAL TABLE docs2 USING fts5(x)"},
}

// TestSchemaCheck: a new index passes; each planted object, redefinition
// or configuration makes Open fail with ErrDamaged, and a connection
// open before the plant refuses its next read and write alike.
func TestSchemaCheck(t *testing.T) {
	ctx := context.Background()
	want, err := expected()
	require.NoError(t, err)
	require.NoError(t, CheckSchema(want))
	require.ErrorIs(t, CheckSchema(Schema{Version: Version}), ErrDamaged)
	for _, c := range plantedSchemas {
		t.Run(c.name, func(t *testing.T) {
			p := newIndex(t, t.TempDir())
			open, err := Open(ctx, p, OpenOptions{})
			require.NoError(t, err)
			defer open.Close()
			require.NoError(t, plant(t, p, c.sql))

			_, err = Open(ctx, p, OpenOptions{})
			require.ErrorIs(t, err, ErrDamaged)
			_, err = open.Proofs(ctx)
			require.ErrorIs(t, err, ErrDamaged, "a read after the plant")
			_, err = open.Apply(ctx, []Update{{ID: "b", Reset: true, Rev: 1}}, NoWait)
			require.ErrorIs(t, err, ErrDamaged, "a write after the plant")
		})
	}
}

// TestTriggersNeverRun: a trigger added between two checks (as another
// process may at any time) never runs: the authorizer refuses it when
// the statement that would fire it is prepared.
func TestTriggersNeverRun(t *testing.T) {
	ctx := context.Background()
	p := newIndex(t, t.TempDir())
	db, err := Open(ctx, p, OpenOptions{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, plant(t, p, "CREATE TABLE seen (x); CREATE TRIGGER t AFTER INSERT ON msgs BEGIN INSERT INTO seen VALUES (1); END"))
	err = db.write(ctx, NoWait, func(tx *wtx) error { // past the check: only the authorizer stands
		_, err := tx.exec(ctx, insertMsgSQL, 1, 5, "user", 1)
		return err
	})
	require.ErrorIs(t, db.classify("insert", err), ErrDamaged)
	raw, err := sql.Open("sqlite", rawURI(t, p, "?mode=ro"))
	require.NoError(t, err)
	defer raw.Close()
	var n int
	require.NoError(t, raw.QueryRow("SELECT count(*) FROM seen").Scan(&n))
	require.Zero(t, n, "the trigger never ran")
}

// TestOperationsBounded: an operation that would run forever is
// interrupted at the DB's limit with ErrSlow, and the DB goes on.
func TestOperationsBounded(t *testing.T) {
	ctx := context.Background()
	p := newIndex(t, t.TempDir())
	db, err := Open(ctx, p, OpenOptions{Limit: 200 * time.Millisecond})
	require.NoError(t, err)
	defer db.Close()
	start := time.Now()
	err = db.run(ctx, 0, "spin", func(ctx context.Context) error {
		return db.read(ctx, func(tx *sql.Tx) error {
			// 10^12 rows (no CTE: the authorizer refuses a CTE as a view).
			many := "[" + strings.Repeat("0,", 9999) + "0]"
			var n int
			return tx.QueryRowContext(ctx, "SELECT count(*) FROM json_each(?1) a, json_each(?1) b, json_each(?1) c", many).Scan(&n)
		})
	})
	require.ErrorIs(t, err, ErrSlow)
	require.False(t, errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrSlow))
	require.Less(t, time.Since(start), time.Minute)
	_, err = db.Proofs(ctx)
	require.NoError(t, err, "the DB goes on")
}

// TestURI: every byte of a path that SQLite or the driver would read as
// URI syntax is escaped.
func TestURI(t *testing.T) {
	for _, p := range []string{"/a/store?x/i.db", "/a/store#x/i.db", "/a/st%41re/i.db", "/a/s t/i.db", "/a/x&mode=rwc/i.db", "//a/b"} {
		u, err := URI(p)
		require.NoError(t, err)
		path, _, ok := strings.Cut(strings.TrimPrefix(u, "file://"), "?")
		require.True(t, ok)
		require.NotContains(t, path, "#")
		require.NotContains(t, path, "&")
		require.NotContains(t, path, " ")
		require.Equal(t, strings.Count(p, "%")+strings.Count(p, "?")+strings.Count(p, "#")+strings.Count(p, " ")+strings.Count(p, "&")+strings.Count(p, "="),
			strings.Count(path, "%"), "%s -> %s", p, u)
	}
}

// FuzzSchemaCheck: whatever SQL a hostile copy of the index ran on it
// (with the schema writable), Open either refuses it with ErrDamaged or
// opens an index whose schema is exactly a new index's, on which a write
// and a search complete in bounded time and never fail but as damage.
func FuzzSchemaCheck(f *testing.F) {
	for _, c := range plantedSchemas {
		f.Add(c.sql)
	}
	f.Add("")
	f.Add("INSERT INTO sessions (id, rev, messages, digest, title, title_rev, updated, project, labels, log_dev, log_ino, log_size, log_mtime) VALUES ('x', 1, 0, x'', '', 0, 0, '', '{}', 0, 0, 0, 0)")
	f.Add("UPDATE sqlite_schema SET sql = 'CREATE TABLE sessions (x)' WHERE name = 'sessions'")
	f.Add("DELETE FROM docs_config")
	f.Add("CREATE TEMP TRIGGER tt AFTER INSERT ON msgs BEGIN SELECT 1; END")
	dir := f.TempDir()
	seed := newIndex(f, dir)
	clean, err := os.ReadFile(seed)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, stmts string) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "index.db")
		require.NoError(t, os.WriteFile(p, clean, 0o600))
		// Statements SQLite refused may have run in part: the file is
		// whatever they left, checked all the same.
		_ = plant(t, p, stmts)
		db, err := Open(ctx, p, OpenOptions{Limit: 5 * time.Second})
		if err != nil {
			require.ErrorIs(t, err, ErrDamaged)
			return
		}
		defer db.Close()
		raw, err := sql.Open("sqlite", rawURI(t, p, "?mode=ro"))
		require.NoError(t, err)
		defer raw.Close()
		got, err := readSchema(ctx, raw)
		require.NoError(t, err)
		got.Config, err = readConfig(ctx, raw)
		require.NoError(t, err)
		require.NoError(t, CheckSchema(got), "Open accepted a schema that is not the index's")
		q, _ := fulltext.Parse("amber")
		_, err = db.Apply(ctx, []Update{{ID: "z", Reset: true, Rev: 1, Messages: 1,
			Add: []Message{{Index: 0, Rev: 1, Doc: fulltext.Doc{Role: session.RoleUser, Text: "amber"}}}}}, NoWait)
		if err != nil {
			require.ErrorIs(t, err, ErrDamaged)
		}
		if _, err := db.Search(ctx, q, Filter{}, 10); err != nil {
			require.ErrorIs(t, err, ErrDamaged)
		}
	})
}

// BenchmarkSchemaCheck: what the check adds to every transaction (a read
// of sqlite_schema and of the FTS5 configuration), beside an empty read
// transaction.
func BenchmarkSchemaCheck(b *testing.B) {
	ctx := context.Background()
	p := newIndex(b, b.TempDir())
	db, err := Open(ctx, p, OpenOptions{})
	require.NoError(b, err)
	defer db.Close()
	b.Run("check=on", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, db.read(ctx, func(*sql.Tx) error { return nil }))
		}
	})
	b.Run("check=off", func(b *testing.B) {
		for b.Loop() {
			tx, err := db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			require.NoError(b, err)
			var v int
			require.NoError(b, tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v))
			require.NoError(b, tx.Rollback())
		}
	})
}
