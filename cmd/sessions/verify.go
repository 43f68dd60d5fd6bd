package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore/jsonlstore"
)

const verifyDoc = `
Checks every record of the given sessions (all sessions when none is given):
checksum and framing, the revision, generation and time sequence, that each
snapshot decodes and restores, that the bytes after the last record are only
an uncommitted tail, and that summary.json agrees with the log. A session
whose log is missing, or is not a regular file, is corrupt; one that cannot
be read at all (a file this user may not read) is reported as unreadable,
and verify goes on with the others. Each problem is printed with its file
and byte offset. Notes (an uncommitted tail, which
the next lease holder removes; files in forensic/) are no failure.

Verify only reads, takes no lease, and is safe while agents write: a live
store never produces a false alarm.

A session written (in part) by a newer version of sessionstore is not
corrupt: its records up to the newer ones are checked, and the rest are
left to the newer version (this one does not write to such a session).

Exit status: 0 when every record checks out, 1 when anything is corrupt or
a session cannot be read, 2 on a usage error or an error that kept verify
from checking at all, 3 when nothing is corrupt but some records were
written by a newer version.`

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("verify", verifyDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	quiet := c.fs.Bool("quiet", false, "print only sessions with problems")
	pos, code, ok := c.parse(args, 0, -1)
	if !ok {
		return code
	}
	ids, err := sessionIDs(pos)
	if err != nil {
		return c.usageError("%v", err)
	}
	if _, ok := c.pgDSN(); ok {
		return c.pgVerify(ctx, ids, *asJSON, *quiet)
	}
	st, err := c.openStore(false)
	if err != nil {
		c.fail(err)
		return exitUsage
	}
	defer func() { _ = st.Close() }() // read-only use
	rep, err := st.Verify(ctx, ids...)
	if err != nil {
		c.fail(err)
		return exitUsage
	}
	if *asJSON {
		if rep.Sessions == nil {
			rep.Sessions = []jsonlstore.SessionVerifyReport{}
		}
		if err := writeJSON(stdout, rep); err != nil {
			c.fail(err)
			return exitUsage
		}
	} else {
		printVerify(stdout, &rep, *quiet)
	}
	switch {
	case !rep.OK():
		return exitFail
	case rep.NewerCount() > 0:
		return exitNewer
	}
	return exitOK
}

func printVerify(w io.Writer, rep *jsonlstore.VerifyReport, quiet bool) {
	bad := len(rep.Unreadable)
	printUnreadable(w, rep.Unreadable)
	for i := range rep.Sessions {
		sr := &rep.Sessions[i]
		if !sr.OK() {
			bad++
		} else if quiet {
			continue
		}
		status := "ok"
		switch {
		case !sr.OK():
			status = "CORRUPT"
		case sr.Newer != nil:
			status = "written by a newer version"
		}
		fmt.Fprintf(w, "%s: %s (%d sound records", sr.ID, status, sr.Records)
		if sr.Revision > 0 {
			fmt.Fprintf(w, ", revisions 1-%d", sr.Revision)
		}
		fmt.Fprintln(w, ")")
		for _, p := range sr.Problems {
			fmt.Fprintf(w, "  problem: %s\n", p)
		}
		if sr.Newer != nil {
			fmt.Fprintf(w, "  newer: %s\n", sr.Newer)
		}
		for _, n := range sr.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	if n := len(rep.Unreadable); n > 0 {
		fmt.Fprintf(w, "%d sessions verified: %d corrupt; %d could not be read\n", len(rep.Sessions), bad-n, n)
		return
	}
	if bad > 0 {
		fmt.Fprintf(w, "%d sessions verified: %d corrupt; 'sessions repair ID' explains the way out\n", len(rep.Sessions), bad)
		return
	}
	if n := rep.NewerCount(); n > 0 {
		fmt.Fprintf(w, "%d sessions verified: none corrupt; %d written (in part) by a newer version, checked up to its records\n", len(rep.Sessions), n)
		return
	}
	fmt.Fprintf(w, "%d sessions verified: all sound\n", len(rep.Sessions))
}
