package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// storeDir is the store the commands use: --dir, else
// jsonlstore.DefaultDir.
func storeDir(flagDir string) (string, error) {
	if flagDir != "" {
		return flagDir, nil
	}
	return jsonlstore.DefaultDir()
}

// openStore opens the command's store. Only commands that write (demo)
// create a missing store; the others say there is none.
func (c *cli) openStore(create bool) (*jsonlstore.Store, error) {
	if _, ok := c.pgDSN(); ok {
		return nil, c.needDir()
	}
	dir, err := storeDir(c.dir)
	if err != nil {
		return nil, err
	}
	if !create {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no store at %s (use --dir, or set SESSIONSTORE_DIR)", dir)
		}
	}
	return jsonlstore.Open(dir, jsonlstore.Options{Logger: warnLogger(c.stderr)})
}

// warnLogger reports the store's warnings (a corrupt session skipped by a
// listing, …) on stderr, without timestamps.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// sessionID validates a command-line session ID.
func sessionID(s string) (session.SessionID, error) {
	id := session.SessionID(s)
	return id, sessionstore.ValidateID(id)
}

// withStore opens the store, runs fn, and closes the store.
func (c *cli) withStore(ctx context.Context, create bool, fn func(st *jsonlstore.Store) int) int {
	st, err := c.openStore(create)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // releases the root handle only: nothing written waits on it
	if ctx.Err() != nil {
		return c.fail(ctx.Err())
	}
	return fn(st)
}

// sessionIDs validates command-line session IDs.
func sessionIDs(args []string) ([]session.SessionID, error) {
	var ids []session.SessionID
	for _, a := range args {
		id, err := sessionID(a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}
