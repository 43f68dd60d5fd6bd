package main

import (
	"context"
	"encoding/json"
	"io"
	"strconv"

	"github.com/sessionstore/sessionstore/jsonlstore"
)

const logDoc = `
Lists a session's revisions, oldest first: revision, the lease generation of
the holder that wrote it, when it was written (UTC, to the millisecond), the
record kind, its size, and where it is: in the log, or in an archive
(compaction moved it there). Payloads are not decoded. At a corrupt record
the listing stops with the error (file and offset) on stderr and exit status
1; 'sessions repair' is the way out.`

// logTimeFormat is RFC 3339 at millisecond precision, fixed width (--json
// has the full precision).
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func cmdLog(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("log", logDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print one JSON object per revision (JSON Lines)")
	id, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	if _, ok := c.pgDSN(); ok {
		return c.pgLog(ctx, id, *asJSON)
	}
	return c.withStore(ctx, false, func(st *jsonlstore.Store) int {
		enc := json.NewEncoder(stdout)
		var rows [][]string
		var rerr error
		for info, err := range st.Records(ctx, id) {
			if err != nil {
				rerr = err
				break
			}
			if *asJSON {
				if err := enc.Encode(info); err != nil {
					return c.fail(err)
				}
				continue
			}
			where := "log"
			if info.Archived {
				where = "archive"
			}
			rows = append(rows, []string{strconv.FormatUint(info.Revision, 10), strconv.FormatUint(info.Generation, 10),
				info.Time.UTC().Format(logTimeFormat), info.Kind, strconv.FormatInt(info.Bytes, 10), where})
		}
		if !*asJSON {
			if err := writeTable(stdout, []string{"REV", "GEN", "TIME", "KIND", "BYTES", "IN"}, rows,
				[]bool{true, true, false, false, true, false}); err != nil {
				return c.fail(err)
			}
		}
		if rerr != nil {
			return c.fail(rerr)
		}
		return exitOK
	})
}
