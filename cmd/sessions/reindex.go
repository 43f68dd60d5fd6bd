package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

const reindexDoc = `
Rebuilds the store's indexes from the sessions' records: the catalog of a
directory store (ROOT/.catalog/), which a listing reads instead of every
session's files. An index is a cache — the records are the only truth, and
every command answers correctly without it — so this is never needed for
correctness: listings rebuild the catalog themselves when they find it
missing, damaged or stale. It is the way back after something changed logs
behind the catalog (an older program, a hand edit), and takes as long as
reading every session. It modifies no session and is safe while agents
write.`

// catalogReindexer is a store that keeps a catalog (jsonlstore).
type catalogReindexer interface {
	Reindex(ctx context.Context) (jsonlstore.CatalogReport, error)
}

func cmdReindex(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("reindex", reindexDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		r, ok := st.(catalogReindexer)
		if !ok {
			return c.fail(fmt.Errorf("%s keeps no index to rebuild", c.location()))
		}
		rep, err := r.Reindex(ctx)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			return c.printJSON(map[string]any{"catalog": rep})
		}
		fmt.Fprintf(stdout, "catalog: %d sessions", rep.Sessions)
		if rep.Unreadable > 0 {
			fmt.Fprintf(stdout, " (%d could not be read: 'sessions verify' says why)", rep.Unreadable)
		}
		fmt.Fprintln(stdout)
		return exitOK
	})
}
