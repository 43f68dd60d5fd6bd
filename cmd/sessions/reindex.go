package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

const reindexDoc = `
Rebuilds the store's indexes from the sessions' records: on a directory
store, the catalog (ROOT/.catalog/, which a listing reads instead of every
session's files) and the search index (ROOT/.search/); on PostgreSQL, the
search index. An index is a cache — the records are the only truth, and
every command answers correctly without it — so this is never needed for
correctness: listings rebuild the catalog themselves when they find it
missing, damaged or stale, and a search without its index says so. It is
the way back after something changed logs behind the indexes (an older
program, a hand edit) or after an index was lost, and takes as long as
reading every session. It modifies no session and is safe while agents
write.`

// catalogReindexer is a store that keeps a catalog (jsonlstore).
type catalogReindexer interface {
	Reindex(ctx context.Context) (maintenance.CatalogReport, error)
}

func cmdReindex(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("reindex", reindexDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		cr, hasCatalog := st.(catalogReindexer)
		sr, hasSearch := st.(sessionstore.SearchReindexer)
		if !hasCatalog && !hasSearch {
			return c.fail(fmt.Errorf("%s keeps no index to rebuild", c.location()))
		}
		out := map[string]any{}
		var lines []string
		if hasCatalog {
			rep, err := cr.Reindex(ctx)
			if err != nil {
				return c.fail(err)
			}
			out["catalog"] = rep
			for _, name := range rep.SetAside {
				lines = append(lines, fmt.Sprintf("catalog: set aside %s (not what the catalog keeps there)", name))
			}
			line := fmt.Sprintf("catalog: %d sessions", rep.Sessions)
			if rep.Unreadable > 0 {
				line += fmt.Sprintf(" (%d could not be read: 'sessions verify' says why)", rep.Unreadable)
			}
			lines = append(lines, line)
		}
		if hasSearch {
			rep, err := sr.ReindexSearch(ctx)
			if err != nil {
				return c.fail(err)
			}
			out["search"] = rep
			c.warnUnreadable(rep.Unreadable)
			lines = append(lines, fmt.Sprintf("search index: %d sessions indexed", rep.Sessions))
		}
		if *asJSON {
			return c.printJSON(out)
		}
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
		return exitOK
	})
}
