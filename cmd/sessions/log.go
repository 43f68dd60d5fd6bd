package main

import (
	"bufio"
	"context"
	"io"
	"strconv"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
)

const logDoc = `
Lists a session's revisions, oldest first: revision, the lease generation of
the holder that wrote it, when it was written (UTC, to the millisecond), the
record kind, its size, and where it is: in the log (for a PostgreSQL store,
its records table), or in an archive (compaction moved it there). Payloads
are not decoded. At a corrupt record the listing stops with the error (file
and offset) on stderr and exit status 1; 'sessions repair' is the way out.`

// logTimeFormat is RFC 3339 at millisecond precision, fixed width (--json
// has the full precision).
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func cmdLog(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("log", logDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print one JSON object per revision (JSON Lines)")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		bw := bufio.NewWriter(stdout)
		var rows [][]string
		var rerr error
		for info, err := range sessionstore.Records(ctx, st, id) {
			if err != nil {
				rerr = err
				break
			}
			if *asJSON {
				b, err := jsonLine(info)
				if err == nil {
					_, err = bw.Write(b)
				}
				if err != nil {
					return c.fail(err)
				}
				continue
			}
			where := "log"
			if info.Archived {
				where = "archive"
			}
			rows = append(rows, []string{strconv.FormatUint(info.Revision, 10), strconv.FormatUint(info.Generation, 10),
				info.Time.UTC().Format(logTimeFormat), orDash(info.Kind), strconv.FormatInt(info.Bytes, 10), where})
		}
		if !*asJSON {
			t := cli.Table{Columns: []cli.Column{{Header: "REV", Right: true}, {Header: "GEN", Right: true}, {Header: "TIME"},
				{Header: "KIND"}, {Header: "BYTES", Right: true}, {Header: "IN"}}, Rows: rows}
			if err := t.Write(bw, 0); err != nil {
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
	})
}
