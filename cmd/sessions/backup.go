package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

const backupDoc = `
Copies the given sessions (all sessions when none is given) into the store
at DEST (created if missing; a session already in DEST is an error), then
verifies the copy. Each session's copy is consistent even while agents
append and compactions run: its log and its archives agree, and it holds
every revision from 1 up to the moment its log was opened, each exactly
once. Lease, summary and forensic files are not copied; the copy's first
lease holder starts above every generation in its log. A session that cannot
be read (a damaged or missing log, a file this user may not read) is not
copied: it is reported, and the others are. DEST must lie outside the store.

When no compaction can run, 'cp -r' of the store is enough (see README);
'backup' is the way that is always safe.

Backup works on a directory store; 'sessions migrate' copies a PostgreSQL
store.

Exit status: 0 when every session was copied and the copy verifies, 3 when
the copy does not verify, 1 when the copy failed or a session could not be
read (it is reported, and the others are copied), 2 on a usage error.`

func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("backup", backupDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	pos, code, ok := c.parseIDs(args, 1)
	if !ok {
		return code
	}
	dest := pos[0]
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		ids, err := resolveAll(ctx, st, pos[1:])
		if err != nil {
			return c.fail(err)
		}
		rep, err := st.Backup(ctx, dest, ids...)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			if rep.Sessions == nil {
				rep.Sessions = []maintenance.SessionBackup{}
			}
			if rep.Verify.Sessions == nil {
				rep.Verify.Sessions = []sessionstore.SessionVerifyReport{}
			}
			if err := writeJSON(stdout, rep); err != nil {
				return c.fail(err)
			}
		} else {
			printBackup(stdout, &rep)
		}
		switch {
		case !rep.Verify.OK():
			return exitCorrupt
		case !rep.OK():
			return exitFail
		}
		return exitOK
	})
}

func printBackup(w io.Writer, rep *maintenance.BackupReport) {
	var logBytes, archiveBytes int64
	for _, sb := range rep.Sessions {
		fmt.Fprintf(w, "%s: revisions 1-%d, log %s", sb.ID, sb.Revision, cli.HumanBytes(sb.LogBytes))
		if sb.Segments > 0 {
			fmt.Fprintf(w, ", %d archive segments %s", sb.Segments, cli.HumanBytes(sb.ArchiveBytes))
		}
		fmt.Fprintln(w)
		logBytes += sb.LogBytes
		archiveBytes += sb.ArchiveBytes
	}
	for _, id := range slices.Sorted(maps.Keys(rep.Skipped)) {
		fmt.Fprintf(w, "%s: skipped, %s\n", id, rep.Skipped[id])
	}
	printUnreadable(w, rep.Unreadable)
	fmt.Fprintf(w, "%s copied to %s (log %s, archives %s)\n",
		cli.Plural(len(rep.Sessions), "session"), cli.Escape(rep.Dest), cli.HumanBytes(logBytes), cli.HumanBytes(archiveBytes))
	if n := len(rep.Unreadable); n > 0 {
		fmt.Fprintf(w, "%s could not be read and %s NOT copied\n", cli.Plural(n, "session"), map[bool]string{true: "was", false: "were"}[n == 1])
	}
	if !rep.Verify.OK() {
		fmt.Fprintln(w, "the copy does NOT verify:")
		printVerify(w, &rep.Verify, true, cli.Palette{})
		return
	}
	fmt.Fprintln(w, "copy verified: every record checks out")
}
