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

const syncDoc = `
Brings the stores at A (without A: the store, as --dir or its default
names it) and B (created if missing) to the union of their sessions, then verifies what it wrote on each side. A session on one side
only is copied to the other. A session appended on one side only is brought
up to date on the other, only its new bytes copied (as 'backup' does). A
session appended on both sides since their last common revision N is kept
on each side as it is, and each side gets the other's branch as a new
session: a fork of it (its parent is the session) labelled
sync/diverged-from=ID and sync/diverged-at=N, holding every revision of that
branch. Nothing is chosen silently and nothing is lost; running sync again
changes nothing. A session a live writer holds on either side is skipped
and reported. The stores may be on different file systems (a laptop and a
USB disk); each may have been made by 'cp -r', rsync or 'backup' of the
other. An interrupted sync leaves both stores readable; run it again to
finish.

On a terminal, a long sync shows a progress bar on stderr.

Exit status: 0 when every session was synced and what was written verifies,
3 when it does not verify, 1 when a session could not be read or the sync
failed, 2 on a usage error.`

func cmdSync(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("sync", syncDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	pos, code, ok := c.parse(args, 1, 2)
	if !ok {
		return code
	}
	if len(pos) == 2 {
		if c.dir != "" {
			return c.usageError("give A or --dir, not both")
		}
		c.dir, pos = pos[0], pos[1:]
	}
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		bar := newCountBar(stderr, "syncing")
		rep, err := st.Sync(ctx, pos[0], maintenance.SyncOptions{Progress: bar.update})
		bar.finish()
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			for _, l := range []*[]maintenance.SessionBackup{&rep.ToA, &rep.ToB} {
				if *l == nil {
					*l = []maintenance.SessionBackup{}
				}
			}
			if rep.Forks == nil {
				rep.Forks = []maintenance.SyncFork{}
			}
			for _, v := range []*sessionstore.VerifyReport{&rep.VerifyA, &rep.VerifyB} {
				if v.Sessions == nil {
					v.Sessions = []sessionstore.SessionVerifyReport{}
				}
			}
			if err := writeJSON(stdout, rep); err != nil {
				return c.fail(err)
			}
		} else {
			printSync(stdout, &rep)
		}
		switch {
		case !rep.VerifyA.OK() || !rep.VerifyB.OK():
			return exitCorrupt
		case !rep.OK():
			return exitFail
		}
		return exitOK
	})
}

func printSync(w io.Writer, rep *maintenance.SyncReport) {
	printCopied(w, "to "+cli.Escape(rep.A)+": ", rep.ToA)
	printCopied(w, "to "+cli.Escape(rep.B)+": ", rep.ToB)
	for _, f := range rep.Forks {
		where := rep.A
		if f.In == "b" {
			where = rep.B
		}
		fmt.Fprintf(w, "%s: appended on both sides since revision %d; the other side's branch (revisions 1-%d) is fork %s in %s\n",
			f.ID, f.DivergedAt, f.Revisions, f.Fork, cli.Escape(where))
	}
	for _, id := range slices.Sorted(maps.Keys(rep.Skipped)) {
		fmt.Fprintf(w, "%s: skipped, %s\n", id, rep.Skipped[id])
	}
	printUnreadable(w, rep.Unreadable)
	fmt.Fprintf(w, "%s copied to %s, %s to %s, %s made, %s written; %s already alike",
		cli.Plural(len(rep.ToA), "session"), cli.Escape(rep.A), cli.Plural(len(rep.ToB), "session"), cli.Escape(rep.B),
		cli.Plural(len(rep.Forks), "fork"), cli.HumanBytes(rep.BytesCopied), cli.Plural(rep.Unchanged, "session"))
	if n := len(rep.Skipped); n > 0 {
		fmt.Fprintf(w, "; %s skipped", cli.Plural(n, "session"))
	}
	fmt.Fprintln(w)
	for _, side := range []struct {
		name string
		v    *sessionstore.VerifyReport
	}{{rep.A, &rep.VerifyA}, {rep.B, &rep.VerifyB}} {
		if !side.v.OK() {
			fmt.Fprintf(w, "what was written to %s does NOT verify:\n", cli.Escape(side.name))
			printVerify(w, side.v, true, cli.Palette{})
		}
	}
}
