package main

import (
	"bufio"
	"context"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

const exportDoc = `
Writes every revision of a session to stdout as JSON Lines, oldest first, one
object per revision:

  {"revision":1,"generation":1,"time":"2026-11-29T12:00:01Z","schema":1,"snapshot":{...}}

where snapshot is the stored snapshot byte for byte (the same bytes from a
directory and from a PostgreSQL store holding the same records). With
--latest it writes only the latest snapshot, as indented JSON. At a corrupt
record the export stops with the error on stderr and exit status 1, after
the revisions before it.`

func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("export", exportDoc, stdout, stderr)
	latest := c.fs.Bool("latest", false, "write only the latest snapshot, as indented JSON")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		bw := bufio.NewWriterSize(stdout, 64<<10)
		err := sessionstore.Export(ctx, st, id, bw, *latest)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			return c.fail(err)
		}
		return exitOK
	})
}
