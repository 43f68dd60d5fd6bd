package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

const retireDoc = `
Moves idle sessions out of the live set into the store's retired area
(ROOT/.retired/): each is compressed into one pack, synced and read back
whole before the live copy is removed. A retired session is not listed by
ls or found by search; 'ls --retired' lists and 'search --retired' finds
them, and 'restore ID' brings one back exactly as it was. Nothing is ever
deleted: only 'rm' deletes.

Which sessions: the IDs given, and/or those idle at least --older-than
(their latest revision, and their latest restore, are older; 90d, 2w, 36h)
and carrying every --label; or, with --policy, those the store's policy
file (ROOT/.retention.json, FORMAT.md) chooses. A session some process
holds is never retired. Every retire is recorded in
ROOT/.retired/journal.jsonl. On a directory store only.`

const retireUsage = "[ID...] [--older-than D] [--label K=V] [--policy] [--dry-run] [--json]"

func cmdRetire(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("retire", retireDoc, stdout, stderr)
	olderThan := c.fs.String("older-than", "", "only sessions idle at least `age` (90d, 2w, 36h)")
	var labels labelFlag
	c.fs.Var(&labels, "label", "only sessions with this label, `key=value` (repeat: all of them)")
	policy := c.fs.Bool("policy", false, "retire what the store's policy file (ROOT/.retention.json) says")
	dryRun := c.fs.Bool("dry-run", false, "print what would be retired; change nothing")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	names, code, ok := c.parse(args, 0, -1)
	if !ok {
		return code
	}
	opts := maintenance.RetireOptions{Labels: labels.m, Policy: *policy, DryRun: *dryRun}
	if *olderThan != "" {
		d, err := maintenance.ParseAge(*olderThan)
		if err != nil {
			return c.usageError("--older-than: %v", err)
		}
		opts.OlderThan = d
	}
	if *policy && (opts.OlderThan > 0 || len(labels.m) > 0) {
		return c.usageError("--policy chooses by the policy file: give it without --older-than and --label")
	}
	if len(names) == 0 && opts.OlderThan == 0 && len(labels.m) == 0 && !*policy {
		return c.usageError("say which sessions: IDs, --older-than D, --label K=V or --policy")
	}
	ids, err := sessionIDs(names)
	if err != nil {
		return c.usageError("%v", err)
	}
	opts.IDs = ids
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		rep, err := st.Retire(ctx, opts)
		if err != nil {
			return c.fail(err)
		}
		c.warnUnreadable(rep.Unreadable)
		if *asJSON {
			return c.printJSON(rep)
		}
		verb := "retired"
		if rep.DryRun {
			verb = "would retire"
		}
		for _, rs := range rep.Retired {
			fmt.Fprintf(stdout, "%s %s  %s  (%s)  %s\n", verb, rs.ID, sizes(rs.Bytes, rs.PackBytes), rs.Reason, cli.Cell(rs.Summary.Title))
		}
		for _, s := range rep.Skipped {
			fmt.Fprintf(stderr, "left %s live: %s\n", s.ID, s.Reason)
		}
		fmt.Fprintf(stdout, "%s %d sessions, %s\n", verb, len(rep.Retired), sizes(rep.Bytes, rep.PackBytes))
		if len(rep.Skipped) > 0 {
			return exitFail
		}
		return exitOK
	})
}

func sizes(bytes, packed int64) string {
	if packed == 0 {
		return cli.HumanBytes(bytes)
	}
	return fmt.Sprintf("%s → %s", cli.HumanBytes(bytes), cli.HumanBytes(packed))
}

const restoreDoc = `
Brings retired sessions back into the live set, byte for byte as they were
retired (log, archives, blobs, summary, labels): each pack is checked
against its checksums as it is written into a new session directory,
which is synced and published before the pack is removed. Every restore is
recorded in ROOT/.retired/journal.jsonl.`

func cmdRestore(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("restore", restoreDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	names, code, ok := c.parse(args, 1, -1)
	if !ok {
		return code
	}
	ids, err := sessionIDs(names)
	if err != nil {
		return c.usageError("%v", err)
	}
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		rep, err := st.Restore(ctx, ids...)
		if *asJSON && err == nil {
			return c.printJSON(rep)
		}
		for _, rs := range rep.Restored {
			note := ""
			if rs.Reason != "" {
				note = " (" + rs.Reason + ")"
			}
			fmt.Fprintf(stdout, "restored %s%s  %s\n", rs.ID, note, cli.Cell(rs.Summary.Title))
		}
		if errors.Is(err, jsonlstore.ErrNotRetired) {
			return c.fail(fmt.Errorf("%w ('sessions ls --retired' lists the retired sessions)", err))
		}
		if err != nil {
			return c.fail(err)
		}
		return exitOK
	})
}

// lsRetired prints the retired sessions (ls --retired).
func (c *sub) lsRetired(ctx context.Context, asJSON bool) int {
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		out := []maintenance.RetiredSession{}
		failed := false
		for rs, err := range st.RetiredSessions(ctx) {
			if err != nil {
				fmt.Fprintf(c.stderr, "sessions: %s: %v\n", rs.ID, err)
				failed = true
				if ctx.Err() != nil {
					return c.fail(err)
				}
				continue
			}
			out = append(out, rs)
		}
		if asJSON {
			return c.printJSON(out)
		}
		if len(out) == 0 {
			fmt.Fprintln(c.stdout, "no retired sessions")
		}
		for _, rs := range out {
			live := ""
			if rs.AlsoLive {
				live = "  (also live: run 'sessions retire " + string(rs.ID) + "' or 'sessions restore " + string(rs.ID) + "' to finish)"
			}
			fmt.Fprintf(c.stdout, "%s  retired %s  updated %s  %d messages  %s  %s%s\n", rs.ID,
				rs.RetiredAt.Local().Format(time.DateTime), rs.Summary.UpdatedAt.Local().Format(time.DateTime),
				rs.Summary.MessageCount, sizes(rs.Bytes, rs.PackBytes), cli.Cell(rs.Summary.Title), live)
		}
		if failed {
			return exitFail
		}
		return exitOK
	})
}

// rmRetired deletes a retired session (rm --retired): the one way one is.
func (c *sub) rmRetired(ctx context.Context, name string) int {
	if err := checkNames([]string{name}); err != nil {
		return c.usageError("%v", err)
	}
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		if err := st.RemoveRetired(ctx, session.SessionID(name)); err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.stdout, "removed retired %s\n", name)
		return exitOK
	})
}

// verifyRetired checks the packs of the retired sessions named (all when
// none is): verify --retired.
func (c *sub) verifyRetired(ctx context.Context, names []string) int {
	ids, err := sessionIDs(names)
	if err != nil {
		return c.usageError("%v", err)
	}
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		bad, err := st.VerifyRetired(ctx, ids...)
		if err != nil {
			return c.fail(err)
		}
		for _, u := range bad {
			fmt.Fprintf(c.stdout, "%s: %s\n", u.ID, u.Reason)
		}
		if len(bad) > 0 {
			return exitCorrupt
		}
		fmt.Fprintln(c.stdout, "every retired session checks out")
		return exitOK
	})
}
