package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// The store is --dir, else $SESSIONSTORE_DIR, else the XDG data
// directory (cli.StoreDir). A postgres:// (or postgresql://) URL in its
// place is a PostgreSQL store (package pgstore). The commands work
// through the store contract and the root package's optional interfaces
// (sessionstore.Verify, Records, Export, DiskUsage, IDs), so they treat
// both kinds alike; only the commands about files (repair, backup,
// compact, demo) need a directory.

// store returns the command's store location (a directory or a DSN).
func (c *sub) store() (string, error) { return cli.StoreDir(c.dir) }

// location is the store as messages print it: a DSN without its
// password.
func (c *sub) location() string {
	s, err := c.store()
	if err != nil {
		return "the store"
	}
	return cli.Location(s)
}

// open opens the command's store, of either kind. Only demo and import create a
// missing directory store (create); the others say there is none.
func (c *sub) open(ctx context.Context, create bool) (sessionstore.Store, error) {
	loc, err := c.store()
	if err != nil {
		return nil, err
	}
	red, err := c.redactor()
	if err != nil {
		return nil, err
	}
	if cli.IsDSN(loc) {
		return openPGRedacting(ctx, loc, red)
	}
	return cli.OpenDirRedacting(loc, create, c.stderr, red)
}

func (c *sub) openDir(dir string, create bool) (*jsonlstore.Store, error) {
	red, err := c.redactor()
	if err != nil {
		return nil, err
	}
	return cli.OpenDirRedacting(dir, create, c.stderr, red)
}

// openPG opens a PostgreSQL store, saying what to do about an unmigrated
// database. Errors never show the DSN's password: pgx leaves it out.
func openPG(ctx context.Context, dsn string) (*pgstore.Store, error) {
	return openPGRedacting(ctx, dsn, nil)
}

// openPGRedacting is openPG with the Redactor the store writes with (nil:
// the default rules).
func openPGRedacting(ctx context.Context, dsn string, red *redact.Redactor) (*pgstore.Store, error) {
	st, err := pgstore.Open(ctx, dsn, pgstore.Options{Redactor: red})
	if errors.Is(err, pgstore.ErrSchemaOutdated) {
		return nil, fmt.Errorf("%w\nrun 'sessions migrate --schema --to DSN' first", err)
	}
	return st, err
}

// withStore opens the command's store (of either kind), runs fn, and
// closes the store.
func (c *sub) withStore(ctx context.Context, fn func(st sessionstore.Store) int) int {
	st, err := c.open(ctx, false)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // a reader's or a finished writer's store: nothing written waits on Close
	if ctx.Err() != nil {
		return c.fail(ctx.Err())
	}
	return fn(st)
}

// openDirStore opens the command's store, which must be a directory
// (created when missing, with create).
func (c *sub) openDirStore(create bool) (*jsonlstore.Store, error) {
	loc, err := c.store()
	if err == nil && cli.IsDSN(loc) {
		err = fmt.Errorf("it works on a directory store, and %s is a PostgreSQL store", cli.Location(loc))
	}
	if err != nil {
		return nil, err
	}
	return c.openDir(loc, create)
}

// withDir is withStore for the commands that need a directory store.
func (c *sub) withDir(ctx context.Context, create bool, fn func(st *jsonlstore.Store) int) int {
	st, err := c.openDirStore(create)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // releases the root handle only: nothing written waits on it
	if ctx.Err() != nil {
		return c.fail(ctx.Err())
	}
	return fn(st)
}

// withSession opens the command's store, finds the session name names in
// it (sessionstore.ResolveID: its ID, or a unique prefix of one in either
// case), and runs fn.
func (c *sub) withSession(ctx context.Context, name string, fn func(st sessionstore.Store, id session.SessionID) int) int {
	return c.withSessions(ctx, []string{name}, func(st sessionstore.Store, ids []session.SessionID) int { return fn(st, ids[0]) })
}

// withSessions is withSession for any number of names (none: none).
func (c *sub) withSessions(ctx context.Context, names []string, fn func(st sessionstore.Store, ids []session.SessionID) int) int {
	return c.withStore(ctx, func(st sessionstore.Store) int {
		ids, err := resolveAll(ctx, st, names)
		if err != nil {
			return c.fail(err)
		}
		return fn(st, ids)
	})
}

// resolveAll finds the sessions command-line names name in st: each an
// exact ID, or a unique prefix of one in either case
// (sessionstore.ResolveID).
func resolveAll(ctx context.Context, st sessionstore.Store, names []string) ([]session.SessionID, error) {
	ids := make([]session.SessionID, 0, len(names))
	for _, n := range names {
		id, err := sessionstore.ResolveID(ctx, st, n)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// checkNames validates command-line session names (IDs or prefixes of
// them) before any store is opened.
func checkNames(names []string) error {
	_, err := sessionIDs(names)
	return err
}

// sessionIDs is names as session IDs, each valid.
func sessionIDs(names []string) ([]session.SessionID, error) {
	ids := make([]session.SessionID, len(names))
	for i, n := range names {
		ids[i] = session.SessionID(n)
		if err := sessionstore.ValidateID(ids[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}
