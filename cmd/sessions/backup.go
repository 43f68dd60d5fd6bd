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
at DEST (created if missing), then verifies what it wrote. Into an earlier
backup, only what changed is copied: for a session DEST already holds, the
bytes its log lacks, once the records at both ends of DEST's log are found
equal, by their checksums, to the source's at the same places; new blobs and
archives; new sessions. A session compacted or repaired since the last backup
is copied whole, and the summary says so (when DEST held revisions the source
no longer has, DEST's old log is kept in that session's forensic/ first). A
session a live writer holds in DEST is skipped and reported. Without
--delete nothing in DEST is removed; with it, the sessions the source no
longer has are deleted from DEST (only when no ID is given). A backup can be
interrupted at any point: DEST stays readable and the next run completes it.
Each session's copy is consistent even while agents
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

On a terminal, a long backup shows a progress bar on stderr.

Exit status: 0 when every session was copied and the copy verifies, 3 when
the copy does not verify, 1 when the copy failed or a session could not be
read (it is reported, and the others are copied), 2 on a usage error.`

func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("backup", backupDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	del := c.fs.Bool("delete", false, "delete from DEST the sessions the store no longer has")
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
		bar := newCountBar(stderr, "backing up")
		rep, err := st.BackupWith(ctx, dest, maintenance.BackupOptions{Delete: *del, Progress: bar.update}, ids...)
		bar.finish()
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
	printCopied(w, "", rep.Sessions)
	for _, id := range rep.Deleted {
		fmt.Fprintf(w, "%s: deleted from the destination (the store no longer has it)\n", id)
	}
	for _, id := range slices.Sorted(maps.Keys(rep.Skipped)) {
		fmt.Fprintf(w, "%s: skipped, %s\n", id, rep.Skipped[id])
	}
	printUnreadable(w, rep.Unreadable)
	fmt.Fprintf(w, "%s copied to %s, %s written; %s already up to date",
		cli.Plural(len(rep.Sessions), "session"), cli.Escape(rep.Dest), cli.HumanBytes(rep.BytesCopied), cli.Plural(rep.Unchanged, "session"))
	if n := len(rep.Deleted); n > 0 {
		fmt.Fprintf(w, "; %s deleted", cli.Plural(n, "session"))
	}
	if n := len(rep.Skipped); n > 0 {
		fmt.Fprintf(w, "; %s skipped", cli.Plural(n, "session"))
	}
	fmt.Fprintln(w)
	if n := len(rep.Unreadable); n > 0 {
		fmt.Fprintf(w, "%s could not be read and %s NOT copied\n", cli.Plural(n, "session"), map[bool]string{true: "was", false: "were"}[n == 1])
	}
	if !rep.Verify.OK() {
		fmt.Fprintln(w, "the copy does NOT verify:")
		printVerify(w, &rep.Verify, true, cli.Palette{})
		return
	}
	if len(rep.Sessions) > 0 {
		fmt.Fprintln(w, "copy verified: every record checks out")
	}
}

// printCopied prints one line for each session a backup or a sync wrote
// (prefix: where to, for a sync).
func printCopied(w io.Writer, prefix string, sessions []maintenance.SessionBackup) {
	for _, sb := range sessions {
		fmt.Fprintf(w, "%s%s: ", prefix, sb.ID)
		switch sb.Action {
		case maintenance.BackupAppended:
			fmt.Fprintf(w, "appended up to revision %d", sb.Revision)
		case maintenance.BackupReplaced:
			fmt.Fprintf(w, "copied whole (%s), revisions 1-%d", sb.Reason, sb.Revision)
		default:
			fmt.Fprintf(w, "new, revisions 1-%d", sb.Revision)
		}
		fmt.Fprintf(w, ", %s written", cli.HumanBytes(sb.BytesCopied))
		if sb.Segments > 0 {
			fmt.Fprintf(w, ", %d archive segments", sb.Segments)
		}
		if sb.Blobs > 0 {
			fmt.Fprintf(w, ", %s", cli.Plural(sb.Blobs, "blob"))
		}
		if sb.Forensic != "" {
			fmt.Fprintf(w, "; the old copy is kept in %s", cli.Escape(sb.Forensic))
		}
		fmt.Fprintln(w)
	}
}
