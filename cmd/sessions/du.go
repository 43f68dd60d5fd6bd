package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
)

const duDoc = `
Prints the bytes each session occupies (all sessions when none is given): its
log, its archives (written by compaction), its forensic files (bytes that
recovery or repair removed from the log, kept for inspection), its blobs
(part content kept out of line, each content once; a column of its own when
any session has some), and the rest (lease and summary files), with totals.
Sizes are apparent file sizes. For a PostgreSQL store, LOG is the bytes of
the session's record lines and BLOBS the bytes of its content.

A fork's blobs are hard links of its parent's files: each session's row
counts them, as a copy of its directory would hold them; the total counts
each file once, and a last line says how much is shared.`

func cmdDu(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("du", duDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	exact := c.fs.Bool("bytes", false, "print exact byte counts instead of KiB, MiB, …")
	names, code, ok := c.parseIDs(args, 0)
	if !ok {
		return code
	}
	return c.withSessions(ctx, names, func(st sessionstore.Store, ids []session.SessionID) int {
		rep, err := st.DiskUsage(ctx, ids...)
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
		// The BLOBS column only when there are blobs: the table of a store
		// without any stays as it was.
		blobs := rep.Total.BlobBytes > 0
		var rows [][]string
		row := func(name string, u sessionstore.SessionUsage) {
			r := []string{name, size(u.LogBytes), size(u.ArchiveBytes), size(u.ForensicBytes)}
			if blobs {
				r = append(r, size(u.BlobBytes))
			}
			rows = append(rows, append(r, size(u.OtherBytes), size(u.TotalBytes)))
		}
		for _, u := range rep.Sessions {
			row(cli.Escape(string(u.ID)), u)
		}
		if len(rep.Sessions) != 1 {
			row("total", rep.Total)
		}
		head := []string{"ID", "LOG", "ARCHIVES", "FORENSIC", "OTHER", "TOTAL"}
		right := []bool{false, true, true, true, true, true}
		if blobs {
			head = slices.Insert(head, 4, "BLOBS")
			right = append(right, true)
		}
		if err := writeTable(stdout, head, rows, right); err != nil {
			return c.fail(err)
		}
		if shared := rep.Total.SharedBytes; shared > 0 {
			var sum int64
			for _, u := range rep.Sessions {
				sum += u.TotalBytes
			}
			fmt.Fprintf(stdout, "shared: %s in files several sessions hold (forks' blobs), counted once in the total (%s saved)\n",
				size(shared), size(sum-rep.Total.TotalBytes))
		}
		if rep.LeftoverBytes > 0 {
			fmt.Fprintf(stdout, "leftover temporary and trash directories: %s ('sessions repair' sweeps old ones)\n", size(rep.LeftoverBytes))
		}
		return exitOK
	})
}
