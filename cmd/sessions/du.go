package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
)

const duDoc = `
Prints the bytes each session occupies (all sessions when none is given): its
log, its archives (written by compaction), its forensic files (bytes that
recovery or repair removed from the log, kept for inspection), and the rest
(lease and summary files), with totals. Sizes are apparent file sizes. For
a PostgreSQL store, LOG is the bytes of the session's record lines.`

func cmdDu(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("du", duDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	exact := c.fs.Bool("bytes", false, "print exact byte counts instead of KiB, MiB, …")
	names, code, ok := c.parseIDs(args, 0)
	if !ok {
		return code
	}
	return c.withSessions(ctx, names, func(st sessionstore.Store, ids []session.SessionID) int {
		rep, err := sessionstore.DiskUsage(ctx, st, ids...)
		if err != nil {
			return c.fail(err)
		}
		c.warnUnreadable(rep.Unreadable)
		if *asJSON {
			if rep.Sessions == nil {
				rep.Sessions = []sessionstore.SessionUsage{}
			}
			return c.printJSON(rep)
		}
		if len(rep.Sessions) == 0 {
			fmt.Fprintln(stdout, "no sessions")
			return exitOK
		}
		size := cli.HumanBytes
		if *exact {
			size = func(n int64) string { return strconv.FormatInt(n, 10) }
		}
		var rows [][]string
		row := func(name string, u sessionstore.SessionUsage) {
			rows = append(rows, []string{name, size(u.LogBytes), size(u.ArchiveBytes),
				size(u.ForensicBytes), size(u.OtherBytes), size(u.TotalBytes)})
		}
		for _, u := range rep.Sessions {
			row(cli.Escape(string(u.ID)), u)
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
