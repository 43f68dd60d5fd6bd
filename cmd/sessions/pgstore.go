package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
)

// A store given as a postgres:// (or postgresql://) URL, by --dir or
// $SESSIONSTORE_DIR, is a PostgreSQL store (package pgstore). The
// commands that use only the store contract (ls, show, lease, rm) run on
// either kind; log, verify and export have a PostgreSQL variant here;
// the commands about files (repair, du, watch, demo) say they need a
// directory.

// isDSN reports whether store names a PostgreSQL database.
func isDSN(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// redactDSN hides a DSN's password, for messages.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		return u.Redacted()
	}
	return "the PostgreSQL store"
}

// pgDSN returns the command's store when it is a PostgreSQL DSN.
func (c *cli) pgDSN() (string, bool) {
	store := c.dir
	if store == "" {
		store = os.Getenv("SESSIONSTORE_DIR")
	}
	return store, isDSN(store)
}

// needDir is the error of a file-only command given a PostgreSQL store.
func (c *cli) needDir() error {
	dsn, _ := c.pgDSN()
	return fmt.Errorf("sessions %s works on a directory store, and %s is a PostgreSQL store", c.name, redactDSN(dsn))
}

// openPG opens the command's PostgreSQL store.
func (c *cli) openPG(ctx context.Context) (*pgstore.Store, error) {
	dsn, _ := c.pgDSN()
	st, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if errors.Is(err, pgstore.ErrSchemaOutdated) {
		return nil, fmt.Errorf("%w\nrun 'sessions migrate --schema --to DSN' first", err)
	}
	return st, err
}

// withAnyStore opens the command's store, of either kind, runs fn, and
// closes the store.
func (c *cli) withAnyStore(ctx context.Context, fn func(st sessionstore.Store) int) int {
	if _, ok := c.pgDSN(); !ok {
		return c.withStore(ctx, false, func(st *jsonlstore.Store) int { return fn(st) })
	}
	st, err := c.openPG(ctx)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // always nil: it stops the store's goroutines and closes the pool
	return fn(st)
}

// pgLog is log on a PostgreSQL store: the same table (IN is "db"), or the
// same JSON Lines without file and offset.
func (c *cli) pgLog(ctx context.Context, id session.SessionID, asJSON bool) int {
	st, err := c.openPG(ctx)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // always nil: it stops the store's goroutines and closes the pool
	var rows [][]string
	var rerr error
	bw := bufio.NewWriter(c.stdout)
	enc := json.NewEncoder(bw)
	for r, err := range st.Records(ctx, id) {
		if err != nil {
			rerr = err
			break
		}
		info := jsonlstore.RecordInfo{Revision: r.Revision, Generation: r.Generation, Time: r.Time, Schema: r.Schema,
			Kind: r.Kind, File: "pgstore_records", Bytes: int64(len(r.Line)), PayloadBytes: payloadBytes(r)}
		if asJSON {
			if err := enc.Encode(info); err != nil {
				return c.fail(err)
			}
			continue
		}
		rows = append(rows, []string{strconv.FormatUint(r.Revision, 10), strconv.FormatUint(r.Generation, 10),
			r.Time.UTC().Format(logTimeFormat), r.Kind, strconv.Itoa(len(r.Line)), "db"})
	}
	if !asJSON {
		if err := writeTable(bw, []string{"REV", "GEN", "TIME", "KIND", "BYTES", "IN"}, rows,
			[]bool{true, true, false, false, true, false}); err != nil {
			return c.fail(err)
		}
	}
	if err := bw.Flush(); err != nil {
		return c.fail(err)
	}
	if rerr != nil {
		return c.fail(rerr)
	}
	return exitOK
}

// payloadBytes is the length of a record's payload: its line less the
// envelope, which ends with `"snap":` and starts again at `,"crc":"`.
func payloadBytes(r pgstore.StoredRecord) int {
	start := strings.Index(string(r.Line), `,"snap":`) + len(`,"snap":`)
	end := len(r.Line) - len(`,"crc":"xxxxxxxx"}`+"\n")
	return max(0, end-start)
}

// pgVerify is verify on a PostgreSQL store, reported as verify reports a
// directory store.
func (c *cli) pgVerify(ctx context.Context, ids []session.SessionID, asJSON, quiet bool) int {
	st, err := c.openPG(ctx)
	if err != nil {
		c.fail(err)
		return exitUsage
	}
	defer func() { _ = st.Close() }() // always nil: it stops the store's goroutines and closes the pool
	found, err := st.Verify(ctx, ids...)
	if err != nil {
		c.fail(err)
		return exitUsage
	}
	rep := jsonlstore.VerifyReport{Sessions: []jsonlstore.SessionVerifyReport{}}
	for _, r := range found {
		sr := jsonlstore.SessionVerifyReport{ID: r.ID, Records: r.Records, Revision: r.Revision}
		if ce := r.Problem; ce != nil {
			msg := "corrupt"
			if ce.Err != nil {
				msg = ce.Err.Error()
			}
			sr.Problems = append(sr.Problems, jsonlstore.Finding{File: ce.Path, Revision: ce.Revision, Message: msg})
		}
		rep.Sessions = append(rep.Sessions, sr)
	}
	if asJSON {
		if err := writeJSON(c.stdout, rep); err != nil {
			c.fail(err)
			return exitUsage
		}
	} else {
		printVerify(c.stdout, &rep, quiet)
	}
	if !rep.OK() {
		return exitFail
	}
	return exitOK
}

// pgExport is export on a PostgreSQL store: the same bytes a directory
// store holding the same records exports.
func (c *cli) pgExport(ctx context.Context, id session.SessionID, latest bool) int {
	st, err := c.openPG(ctx)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // always nil: it stops the store's goroutines and closes the pool
	bw := bufio.NewWriterSize(c.stdout, 64<<10)
	err = st.Export(ctx, id, bw, latest)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return c.fail(err)
	}
	return exitOK
}
