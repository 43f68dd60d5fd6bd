package main

import (
	"context"
	"io"

	"github.com/sessionstore/sessionstore/internal/compactcmd"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

const compactUsage = "[--keep-last N] [--keep-since D] [--wait D] [--dry-run] [--json] [ID...]"

const compactDoc = compactcmd.Doc + `

It is the compact command, with the same flags and report: on a terminal
a progress bar on stderr follows the work; --json prints the reports and
their totals. --dry-run takes no lease and writes nothing. Compaction works
on a directory store.

Exit status: 0 when every session was compacted or skipped, 1 when one
failed, 2 on a usage error.`

func cmdCompact(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("compact", compactDoc, stdout, stderr)
	var f compactcmd.Flags
	f.Register(c.fs)
	names, code, ok := c.parseIDs(args, 0)
	if !ok {
		return code
	}
	if _, err := f.Policy(); err != nil {
		return c.usageError("%v", err)
	}
	if f.DryRun {
		ctx = jsonlstore.ReadOnly(ctx) // its listings leave the catalog as it is
	}
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		ids, err := resolveAll(ctx, st, names)
		if err != nil {
			return c.fail(err)
		}
		return compactcmd.Run(ctx, st, ids, f, stdout, stderr)
	})
}
