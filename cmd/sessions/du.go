package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/sessionstore/sessionstore/jsonlstore"
)

const duDoc = `
Prints the bytes each session occupies (all sessions when none is given): its
log, its archives (written by compaction), its forensic files (bytes that
recovery or repair removed from the log, kept for inspection), and the rest
(lease and summary files), with totals. Sizes are apparent file sizes.`

func cmdDu(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("du", duDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	exact := c.fs.Bool("bytes", false, "print exact byte counts instead of KiB, MiB, …")
	pos, code, ok := c.parse(args, 0, -1)
	if !ok {
		return code
	}
	ids, err := sessionIDs(pos)
	if err != nil {
		return c.usageError("%v", err)
	}
	return c.withStore(ctx, false, func(st *jsonlstore.Store) int {
		rep, err := st.DiskUsage(ctx, ids...)
		if err != nil {
			return c.fail(err)
		}
		c.warnUnreadable(rep.Unreadable)
		if *asJSON {
			if rep.Sessions == nil {
				rep.Sessions = []jsonlstore.SessionDU{}
			}
			if err := writeJSON(stdout, rep); err != nil {
				return c.fail(err)
			}
			return exitOK
		}
		size := humanBytes
		if *exact {
			size = func(n int64) string { return strconv.FormatInt(n, 10) }
		}
		var rows [][]string
		row := func(name string, u jsonlstore.SessionDU) {
			rows = append(rows, []string{name, size(u.LogBytes), size(u.ArchiveBytes),
				size(u.ForensicBytes), size(u.OtherBytes), size(u.TotalBytes)})
		}
		for _, u := range rep.Sessions {
			row(string(u.ID), u)
		}
		if len(rep.Sessions) != 1 {
			row("total", rep.Total)
		}
		if err := writeTable(stdout, []string{"ID", "LOG", "ARCHIVES", "FORENSIC", "OTHER", "TOTAL"}, rows,
			[]bool{false, true, true, true, true, true}); err != nil {
			return c.fail(err)
		}
		if rep.LeftoverBytes > 0 {
			fmt.Fprintf(stdout, "leftover temporary and trash directories: %s ('sessions repair' sweeps old ones)\n", size(rep.LeftoverBytes))
		}
		return exitOK
	})
}
