package searchdb

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
)

// The index's file comes from anywhere a store does (copied with cp -r,
// unpacked from a tar, written by anyone who may write the store), so
// nothing in it is trusted: before a connection runs a statement of
// ours, and again in every transaction, the database's schema
// (sqlite_schema) must be exactly the objects a new index has — no
// trigger, view, extra table or index, no object of ours redefined —
// its FTS5 configuration exactly a new index's, and its version ours.
// A trigger or view would run SQL of the file's choosing inside our
// statements (forging hits, looping forever); a redefined table would
// change what our statements mean. Anything else is ErrDamaged: the
// index is rebuilt as a new file. Beyond the check, every connection
// runs with trusted_schema off and an authorizer that refuses anything
// a trigger or view would do, so that a schema changed by another
// process between two checks still runs nothing of its own.

// SchemaObject is one row of sqlite_schema.
type SchemaObject struct {
	Type, Name, Table string
	// SQL is the statement that made it; empty for the indexes SQLite
	// makes itself (a UNIQUE or PRIMARY KEY constraint's).
	SQL string
}

func (o SchemaObject) String() string {
	return fmt.Sprintf("%s %q on %q", o.Type, o.Name, o.Table)
}

// ConfigRow is one row of the FTS5 table's configuration (docs_config).
type ConfigRow struct {
	Key   string
	Value string // as SQLite prints it (quote())
}

// Schema is what the check compares: the version, the objects and the
// FTS5 configuration.
type Schema struct {
	Version int
	Objects []SchemaObject
	Config  []ConfigRow
}

// expected is the Schema of a new index, made once per process in a
// private in-memory database by this program's SQLite: an index this
// program made always passes, whatever the SQLite version prints for
// the tables FTS5 makes.
var expected = sync.OnceValues(func() (Schema, error) {
	db, err := sql.Open("sqlite", "file::memory:?_pragma=trusted_schema(0)")
	if err != nil {
		return Schema{}, fmt.Errorf("searchdb: expected schema: %w", err)
	}
	defer func() { _ = db.Close() }() // in memory
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return Schema{}, fmt.Errorf("searchdb: expected schema: %w", err)
	}
	s, err := readSchema(ctx, db)
	if err == nil {
		s.Config, err = readConfig(ctx, db)
	}
	if err != nil {
		return Schema{}, fmt.Errorf("searchdb: expected schema: %w", err)
	}
	return s, nil
})

// querier is what reading a schema needs: a connection or a
// transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readSchema reads the version, sqlite_schema and the FTS5
// configuration. Reading sqlite_schema runs nothing of the schema's: it
// is a table, never a view. The configuration is read only when the
// objects are ours (the table docs_config may be anything otherwise).
func readSchema(ctx context.Context, q querier) (Schema, error) {
	var s Schema
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&s.Version); err != nil {
		return s, err
	}
	rows, err := q.QueryContext(ctx, "SELECT type, name, tbl_name, sql FROM sqlite_schema")
	if err != nil {
		return s, err
	}
	defer func() { _ = rows.Close() }() // read-only
	for rows.Next() {
		var o SchemaObject
		var text sql.NullString
		if err := rows.Scan(&o.Type, &o.Name, &o.Table, &text); err != nil {
			return s, err
		}
		o.SQL = text.String
		s.Objects = append(s.Objects, o)
		if len(s.Objects) > maxObjects {
			return s, nil // more than an index has: the check says so
		}
	}
	if err := rows.Err(); err != nil {
		return s, err
	}
	return s, nil
}

// readConfig reads the FTS5 configuration, at most maxObjects rows.
func readConfig(ctx context.Context, q querier) ([]ConfigRow, error) {
	rows, err := q.QueryContext(ctx, "SELECT quote(k), quote(v) FROM docs_config")
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // read-only
	var out []ConfigRow
	for rows.Next() && len(out) <= maxObjects {
		var c ConfigRow
		if err := rows.Scan(&c.Key, &c.Value); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// maxObjects bounds what the check reads: an index has a few dozen
// objects and configuration rows.
const maxObjects = 256

// CheckSchema reports whether got is exactly the schema of a new index
// (objects and configuration in any order): nil, or an error matching
// ErrDamaged that names the first difference.
func CheckSchema(got Schema) error {
	want, err := expected()
	if err != nil {
		return err
	}
	if got.Version != want.Version {
		return fmt.Errorf("%w: version %d, this program's is %d", ErrOtherVersion, got.Version, want.Version)
	}
	if d := diffObjects(got.Objects, want.Objects); d != "" {
		return fmt.Errorf("%w: schema is not the index's: %s", ErrDamaged, d)
	}
	gc, wc := sorted(got.Config, cmpConfig), sorted(want.Config, cmpConfig)
	if !slices.Equal(gc, wc) {
		return fmt.Errorf("%w: full-text configuration is not the index's: %q, want %q", ErrDamaged, gc, wc)
	}
	return nil
}

func cmpObject(a, b SchemaObject) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Table, b.Table), cmp.Compare(a.SQL, b.SQL))
}

func cmpConfig(a, b ConfigRow) int {
	return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Value, b.Value))
}

func sorted[T any](s []T, f func(a, b T) int) []T {
	s = slices.Clone(s)
	slices.SortFunc(s, f)
	return s
}

// diffObjects names the first object of got that a new index lacks, or
// the first of want that got lacks; "" when they are the same.
func diffObjects(got, want []SchemaObject) string {
	if len(got) > maxObjects {
		return fmt.Sprintf("more than %d objects", maxObjects)
	}
	got, want = sorted(got, cmpObject), sorted(want, cmpObject)
	for i, j := 0, 0; i < len(got) || j < len(want); {
		switch {
		case j == len(want) || i < len(got) && cmpObject(got[i], want[j]) < 0:
			o := got[i]
			for _, w := range want {
				if w.Type == o.Type && w.Name == o.Name {
					return fmt.Sprintf("%s is defined as %q", o, o.SQL)
				}
			}
			return fmt.Sprintf("unexpected %s", o)
		case i == len(got) || cmpObject(got[i], want[j]) > 0:
			if i < len(got) && got[i].Type == want[j].Type && got[i].Name == want[j].Name {
				return fmt.Sprintf("%s is defined as %q", got[i], got[i].SQL)
			}
			return fmt.Sprintf("no %s", want[j])
		default:
			i++
			j++
		}
	}
	return ""
}

// checkSchema reads the schema in q (a transaction: the statements that
// follow in it see the schema checked) and checks it.
func checkSchema(ctx context.Context, q querier) error {
	s, err := readSchema(ctx, q)
	if err != nil {
		return err
	}
	if err := CheckSchema(Schema{Version: s.Version, Objects: s.Objects, Config: mustConfig()}); err != nil {
		return err
	}
	// The objects are ours: docs_config is the table FTS5 made.
	if s.Config, err = readConfig(ctx, q); err != nil {
		return err
	}
	return CheckSchema(s)
}

// mustConfig is the expected configuration, for checking the objects
// alone before the configuration may be read.
func mustConfig() []ConfigRow {
	want, err := expected()
	if err != nil {
		return nil
	}
	return want.Config
}
