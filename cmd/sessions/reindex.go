package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
)

const reindexDoc = `
Rebuilds the store's indexes from the sessions' records: the search index
(on a directory store, ROOT/.search/). An index is a cache — the records
are the only truth, and every command answers correctly without it — so
this is never needed for correctness; it makes the next search fast after
the index was lost or damaged, and takes as long as reading every session.`

func cmdReindex(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("reindex", reindexDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		r, ok := st.(sessionstore.SearchReindexer)
		if !ok {
			return c.fail(fmt.Errorf("%s keeps no index to rebuild", c.location()))
		}
		rep, err := r.ReindexSearch(ctx)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			return c.printJSON(map[string]any{"search": rep})
		}
		c.warnUnreadable(rep.Unreadable)
		fmt.Fprintf(stdout, "search index: %d sessions indexed\n", rep.Sessions)
		return exitOK
	})
}
