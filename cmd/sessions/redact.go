package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

const redactDoc = `
Rewrites the whole history of each session — every revision of its log
and its archives, and the blobs and pages they reference — with the
secrets that scan finds replaced by placeholders ([REDACTED:rule:hash]),
and removes the store's other copies of them: the old archive segments,
blobs and summary, the secrets in forensic copies; then rewrites the
listing catalog and the search index as new files. Revision numbers,
generations and times stay; archived revisions come back into the log
(compact archives them again). It takes each session's lease: a session
another process holds is refused unless --wait is given. A retired
session is refused: restore it first. Interrupted, it leaves the old
history or the new one, never a mix; run it again to finish. It cannot
reach copies outside the store (backups, exports) or the disk blocks the
old files occupied: each report says so. Exit status 1 if any session
was not redacted. On a directory store only.`

const redactCmdUsage = "ID... [--generic] [--wait D] [--json]"

func cmdRedact(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("redact", redactDoc, stdout, stderr)
	generic := c.fs.Bool("generic", false, "add the generic rules (more findings, more mistaken ones)")
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: refuse at once)")
	asJSON := c.fs.Bool("json", false, "print the reports as JSON")
	names, code, ok := c.parse(args, 1, -1)
	if !ok {
		return code
	}
	if err := checkNames(names); err != nil {
		return c.usageError("%v", err)
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	r, err := redact.New(redact.Options{Generic: *generic})
	if err != nil {
		return c.fail(err)
	}
	ids := make([]session.SessionID, len(names))
	for i, n := range names {
		ids[i] = session.SessionID(n)
	}
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		reps, err := st.Redact(ctx, ids, r, *wait)
		worst := exitOK
		if err != nil {
			fmt.Fprintf(stderr, "sessions redact: %v\n", err)
			worst = exitFail
		}
		if *asJSON {
			if code := c.printJSON(reps); code != exitOK {
				return code
			}
			return worst
		}
		for _, rep := range reps {
			if rep.Skipped != "" {
				fmt.Fprintf(stderr, "left %s as it is: %s\n", rep.ID, rep.Skipped)
				worst = exitFail
				continue
			}
			if rep.Revisions == 0 {
				continue // failed: said above
			}
			fmt.Fprintf(stdout, "%s: %d of %d revisions rewritten", rep.ID, rep.Rewritten, rep.Revisions)
			if len(rep.Secrets) > 0 {
				rules := make([]string, 0, len(rep.Secrets))
				for rule, n := range rep.Secrets {
					rules = append(rules, fmt.Sprintf("%s %d", rule, n))
				}
				slices.Sort(rules)
				fmt.Fprintf(stdout, "; secrets replaced: %s", strings.Join(rules, ", "))
			}
			fmt.Fprintln(stdout)
			for _, p := range rep.Purged {
				fmt.Fprintf(stdout, "  purged %s\n", p)
			}
			if rep.Unarchived {
				fmt.Fprintf(stdout, "  the archived revisions are back in the log: 'sessions compact %s' archives them again\n", rep.ID)
			}
			if rep.Catalog {
				fmt.Fprintln(stdout, "  rewrote the listing catalog")
			}
			if rep.Search {
				fmt.Fprintln(stdout, "  rewrote the search index")
			}
			for _, n := range rep.NotPurged {
				fmt.Fprintf(stdout, "  not reached: %s\n", n)
			}
		}
		return worst
	})
}
