package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is a sequence of migrations, migrations/NNNN_name.sql, each
// applied once, in order, in its own transaction, and recorded in
// pgstore_schema. A migration is never edited once released: a change is
// a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Their
// versions are 1, 2, … without gaps (checked by a test).
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("pgstore: migration file %s is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// SchemaVersion is the schema version this package's code reads and
// writes: the version of its last embedded migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrationLock is the advisory lock key that serializes concurrent
// Migrate calls on one database ("pgstore" in ASCII).
const migrationLock = 0x7067_7374_6f72_65

const createSchemaTable = `CREATE TABLE IF NOT EXISTS pgstore_schema (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// MigrateReport says what Migrate did.
type MigrateReport struct {
	// From is the schema version found, To the version left (0: none).
	From, To int
	// Applied names the migrations applied, in order.
	Applied []string
}

// Migrate brings the database's schema up to SchemaVersion, applying each
// missing migration in its own transaction and recording it in
// pgstore_schema. Concurrent calls serialize on an advisory lock; a
// database already current is left untouched. It refuses (ErrSchemaNewer)
// a database whose schema is newer than this code knows.
func Migrate(ctx context.Context, dsn string) (MigrateReport, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return MigrateReport{}, fmt.Errorf("pgstore: parse DSN: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return MigrateReport{}, opErr("connect", "", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // each migration committed (or not) in its own transaction: closing changes nothing
	return migrate(ctx, conn)
}

// Migrate is the package function Migrate on the store's database.
func (s *Store) Migrate(ctx context.Context) (MigrateReport, error) {
	if err := s.ready(ctx); err != nil {
		return MigrateReport{}, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return MigrateReport{}, opErr("migrate", "", err)
	}
	defer conn.Release()
	return migrate(ctx, conn.Conn())
}

func migrate(ctx context.Context, conn *pgx.Conn) (MigrateReport, error) {
	ms, err := migrations()
	if err != nil {
		return MigrateReport{}, err
	}
	known := ms[len(ms)-1].version
	var rep MigrateReport
	// Held to the end: a concurrent Migrate waits here, then finds the
	// work done. A session lock, released by the deferred unlock or, if
	// the connection breaks, by the server.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return rep, opErr("migrate", "", fmt.Errorf("lock: %w", err))
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	}()
	if _, err := conn.Exec(ctx, createSchemaTable); err != nil {
		return rep, fmt.Errorf("pgstore: create pgstore_schema: %w", err)
	}
	first := true
	for _, m := range ms {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var cur int
			if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM pgstore_schema`).Scan(&cur); err != nil {
				return err
			}
			if first {
				rep.From, first = cur, false
			}
			rep.To = cur
			if cur > known {
				return fmt.Errorf("%w: database at version %d, this program knows %d", ErrSchemaNewer, cur, known)
			}
			if cur >= m.version {
				return nil
			}
			if cur != m.version-1 {
				return fmt.Errorf("pgstore: schema at version %d cannot take migration %s", cur, m.name)
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO pgstore_schema (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
			rep.To = m.version
			rep.Applied = append(rep.Applied, m.name)
			return nil
		})
		if err != nil {
			if errors.Is(err, ErrSchemaNewer) {
				return rep, err
			}
			return rep, opErr("migrate", "", err)
		}
	}
	return rep, nil
}

// checkSchema refuses a database whose schema is not the one this code
// knows: older (run Migrate) or newer (upgrade the program).
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM pgstore_schema`).Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		v, err = 0, nil
	}
	if err != nil {
		return opErr("read schema version", "", err)
	}
	known := SchemaVersion()
	switch {
	case v > known:
		return fmt.Errorf("%w: database at version %d, this program knows %d", ErrSchemaNewer, v, known)
	case v < known:
		return fmt.Errorf("%w: database at version %d, this program needs %d (run pgstore.Migrate or `sessions migrate --schema`)", ErrSchemaOutdated, v, known)
	}
	return nil
}
