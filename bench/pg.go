package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The pgstore rows run on a PostgreSQL server of their own: a throwaway
// cluster on loopback started once per run by internal/testing/pgtest, with
// durable settings (fsync, synchronous_commit and full_page_writes on), so
// that an append returns once its WAL is on disk, as jsonlstore's returns
// after fdatasync. Each workload gets a fresh database, migrated by
// pgstore.Migrate. When no server can be started, the run goes on without
// the pgstore rows and says why.

// pgServer is the run's PostgreSQL server, started on first use.
type pgServer struct {
	off   bool // -pg=false
	tried bool
	srv   *pgtest.Server
	err   error  // why there is no server
	about string // version and settings, for the report
}

// get returns the server, starting it on the first call; when there is
// none, it prints why (once) to out and returns nil.
func (p *pgServer) get(ctx context.Context, out io.Writer, cl *cleanups) *pgtest.Server {
	if p.tried {
		return p.srv
	}
	p.tried = true
	if p.off {
		p.err = errors.New("-pg=false")
	} else {
		fmt.Fprintln(os.Stderr, "sessbench: starting PostgreSQL for the pgstore rows …")
		p.srv, p.err = pgtest.StartWith(pgtest.Options{Durable: true})
		if p.err == nil {
			srv := p.srv
			cl.add(func() error { return srv.Stop() })
			if p.about, p.err = pgSettings(ctx, srv.DSN); p.err != nil {
				p.srv = nil
			}
		}
	}
	if p.srv == nil {
		// One line: pgx's and pg_ctl's errors span several.
		msg := strings.Join(strings.Fields(p.err.Error()), " ")
		if len(msg) > 400 {
			msg = msg[:400] + " …"
		}
		fmt.Fprintf(out, "- **pgstore rows skipped: %s**\n\n", msg)
		fmt.Fprintf(os.Stderr, "sessbench: pgstore rows skipped: %v\n", p.err)
		return nil
	}
	fmt.Fprintf(out, "- pgstore: %s\n\n", p.about)
	return p.srv
}

// pgSettings describes the server and checks that it runs durably: a
// benchmark against a server that does not sync its WAL at commit would
// compare unlike things.
func pgSettings(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	show := func(name string) (string, error) {
		var v string
		err := conn.QueryRow(ctx, "SHOW "+name).Scan(&v)
		return v, err
	}
	vals := map[string]string{}
	for _, name := range []string{"server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "data_directory"} {
		if vals[name], err = show(name); err != nil {
			return "", fmt.Errorf("SHOW %s: %w", name, err)
		}
	}
	if vals["fsync"] != "on" || vals["synchronous_commit"] != "on" {
		return "", fmt.Errorf("the server runs with fsync=%s synchronous_commit=%s; the benchmark needs both on", vals["fsync"], vals["synchronous_commit"])
	}
	where := "the server of " + pgtest.DSNEnv
	if os.Getenv(pgtest.DSNEnv) == "" {
		where = fmt.Sprintf("a throwaway cluster on 127.0.0.1 (internal/testing/pgtest), data in %s (%s)", vals["data_directory"], fsType(vals["data_directory"]))
	}
	return fmt.Sprintf("PostgreSQL %s, %s; fsync=%s, synchronous_commit=%s, full_page_writes=%s, wal_sync_method=%s; the client connects over TCP on loopback, so each append is a round trip plus a WAL fsync at commit",
		vals["server_version"], where, vals["fsync"], vals["synchronous_commit"], vals["full_page_writes"], vals["wal_sync_method"]), nil
}

// pgDB is one workload's database: migrated, with a store open on it.
type pgDB struct {
	srv  *pgtest.Server
	name string
	dsn  string
	st   *pgstore.Store
}

// newPGDB creates, migrates and opens a fresh database on srv.
func newPGDB(ctx context.Context, srv *pgtest.Server) (*pgDB, error) {
	dsn, name, err := srv.CreateDatabase(ctx)
	if err != nil {
		return nil, err
	}
	d := &pgDB{srv: srv, name: name, dsn: dsn}
	if _, err := pgstore.Migrate(ctx, dsn); err != nil {
		return nil, errors.Join(err, d.drop(ctx))
	}
	if d.st, err = pgstore.Open(ctx, dsn, pgstore.Options{}); err != nil {
		return nil, errors.Join(err, d.drop(ctx))
	}
	return d, nil
}

func (d *pgDB) drop(ctx context.Context) error {
	return d.srv.DropDatabase(context.WithoutCancel(ctx), d.name)
}

// close closes the store and drops the database.
func (d *pgDB) close(ctx context.Context) error {
	return errors.Join(d.st.Close(), d.drop(ctx))
}

// walBytes returns the server's WAL insert position in bytes: the
// difference over a measurement is the WAL the server generated, what it
// writes and syncs for the commits (data files are written later, at
// checkpoints, and not counted).
func (d *pgDB) walBytes(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int64
	err = conn.QueryRow(ctx, "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint").Scan(&n)
	return n, err
}

// pgWriter is a session written through pgstore.
type pgWriter struct {
	w   sessionstore.Writer
	rev uint64
}

func (d *pgDB) create(ctx context.Context, snap sessnap.Snapshot) (*pgWriter, error) {
	w, err := d.st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "bench"})
	if err != nil {
		return nil, err
	}
	return &pgWriter{w: w, rev: w.Revision()}, nil
}

func (p *pgWriter) append(ctx context.Context, snap sessnap.Snapshot) error {
	rev, err := p.w.Append(ctx, p.rev, snap)
	p.rev = rev
	return err
}

func (p *pgWriter) release(ctx context.Context) error {
	return p.w.Release(context.WithoutCancel(ctx))
}
