package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/summary"
)

const repairDoc = `
Takes the session's lease, which runs normal recovery (an uncommitted tail
left by a dead holder is moved to forensic/ and cut), then checks the whole
log. Corruption is reported with its file and offset, and nothing else is
changed, unless a mode says how to repair it:

  --salvage   keep every revision that can still be read. Exact copies of
              lines (a log appended to itself) are dropped; a damaged record,
              and the deltas that cannot be rebuilt without it, are set aside;
              the revisions they held are recorded in the log as missing (a
              gap record), so readers report them instead of failing. Revision
              numbers never change. If the last revisions are lost, the last
              readable one is restored as the next revision.
  --truncate-at-corruption
              cut the log at its first bad record; the revisions after it are
              only in the forensic file.

Either way every removed byte is first saved (synced) in a file under the
session's forensic/ directory, and summary.json is moved there too. Both
free a session that Acquire refuses because of damage. Records written by a
newer version of sessionstore are never removed.

Repair also sweeps leftover temporary and trash directories at the store
root (interrupted creations and deletions) that are older than a minute and
that nobody holds.

Repair works on a directory store. (A PostgreSQL store writes each record in
a transaction that checks it; 'sessions verify' checks what is there.)

Exit status: 0 when the session is sound afterwards, 3 when it is still
corrupt (without --truncate-at-corruption), 1 when repair could not run (a
held lease, an unknown session, an I/O error).`

func cmdRepair(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("repair", repairDoc, stdout, stderr)
	truncate := c.fs.Bool("truncate-at-corruption", false, "cut the log at its first bad record (the removed bytes are kept in forensic/)")
	salvage := c.fs.Bool("salvage", false, "keep every readable revision; set aside damaged records and record the gap")
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: fail at once)")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	return c.withDir(ctx, false, func(st *jsonlstore.Store) int {
		id, err := sessionstore.ResolveID(ctx, st, name)
		if err != nil {
			return c.fail(err)
		}
		rep, err := st.Repair(ctx, id, maintenance.RepairOptions{TruncateAtCorruption: *truncate, Salvage: *salvage, Wait: *wait})
		var he *sessionstore.LeaseHeldError
		if errors.As(err, &he) {
			return c.fail(heldError(he, "repair", *wait))
		}
		if errors.Is(err, jsonlstore.ErrNoLog) && !*asJSON {
			return c.fail(noLogHint(err, id)) // nothing to cut: the report would only say so
		}
		if *asJSON {
			if werr := writeJSON(stdout, rep); werr != nil {
				return c.fail(werr)
			}
		} else if rep.Generation > 0 || rep.Found != nil {
			printRepair(stdout, &rep, *truncate || *salvage)
		}
		if err != nil {
			var ce *sessionstore.CorruptionError
			if errors.Is(err, jsonlstore.ErrNoLog) {
				return c.fail(noLogHint(err, id))
			}
			if errors.As(err, &ce) && !*truncate && !*salvage && rep.Found != nil {
				fmt.Fprintf(stderr, "sessions repair: %s is corrupt; 'sessions repair %s --salvage' keeps every revision that can be read, "+
					"'--truncate-at-corruption' cuts the log at offset %d (removed bytes are kept in forensic/ either way)\n",
					id, id, rep.Found.Offset)
				return exitCorrupt
			}
			c.fail(err)
			if errors.As(err, &ce) {
				return exitCorrupt
			}
			return exitFail
		}
		return exitOK
	})
}

func printRepair(w io.Writer, rep *maintenance.RepairReport, fixing bool) {
	fmt.Fprintf(w, "session %s\n", rep.ID)
	if rep.Generation > 0 {
		fmt.Fprintf(w, "  lease: generation %d; previous holder %s\n", rep.Generation, previousText(rep.Recovery.Previous))
	}
	if r := rep.Recovery; r.TailBytes > 0 {
		fmt.Fprintf(w, "  recovery: removed an uncommitted tail of %d bytes at offset %d, kept in %s\n", r.TailBytes, r.TailOffset, r.ForensicFile)
	}
	if rep.Found != nil {
		fmt.Fprintf(w, "  found: %s\n", cli.Escape(rep.Found.String()))
	} else if rep.Generation > 0 {
		fmt.Fprintln(w, "  found: no corruption")
	}
	for _, a := range rep.Archives {
		fmt.Fprintf(w, "  archive: segment %s holds revisions %d-%d, not %d-%d as an older compaction listed it; renamed %s\n",
			a.Old, a.First, a.Last, a.First, a.Listed, a.New)
	}
	switch sv := rep.Salvaged; {
	case sv != nil:
		fmt.Fprintf(w, "  salvaged: kept %d records, dropped %d duplicate lines\n", sv.Kept, sv.DuplicatesRemoved)
		for _, g := range sv.Gaps {
			fmt.Fprintf(w, "  missing: revisions %d-%d (%s)\n", g.First, g.Last, g.Reason)
		}
		if sv.Restored > 0 {
			fmt.Fprintf(w, "  restored: revision %d holds the last readable revision's snapshot\n", sv.Restored)
		}
	case rep.Cut:
		fmt.Fprintf(w, "  cut: the log at offset %d, removing %d bytes\n", rep.CutOffset, rep.BytesRemoved-rep.Recovery.TailBytes)
	case rep.Found != nil && !fixing:
		fmt.Fprintln(w, "  cut: nothing (not asked to: --salvage or --truncate-at-corruption)")
	case rep.Found != nil && strings.HasSuffix(rep.Found.File, "/"+jsonlstore.SummaryFile):
		fmt.Fprintln(w, "  cut: nothing; the log is sound, summary.json was moved aside")
	case rep.Found != nil:
		fmt.Fprintln(w, "  cut: nothing")
	}
	for _, f := range rep.ForensicFiles {
		fmt.Fprintf(w, "  kept: %s\n", f)
	}
	if rep.Generation > 0 {
		if rep.Revision > 0 {
			fmt.Fprintf(w, "  log: %s, revisions 1-%d\n", cli.Plural(rep.Records, "record"), rep.Revision)
		} else {
			fmt.Fprintln(w, "  log: no sound record")
		}
	}
	if rep.Blobs.Kept != "" {
		fmt.Fprintf(w, "  blobs: none removed: %s\n", cli.Escape(rep.Blobs.Kept))
	}
	for _, s := range rep.Swept {
		fmt.Fprintf(w, "  swept: %s\n", s)
	}
}

func previousText(p summary.LeaseStatus) string {
	switch p.State {
	case summary.LeaseFree:
		return "released cleanly"
	case summary.LeaseStale:
		if p.Holder != nil {
			return fmt.Sprintf("%s died holding it (stale)", holderText(p.Holder))
		}
		return "died holding it (stale)"
	}
	return "none"
}

// heldError explains a lease another process holds (still, after
// waiting wait).
func heldError(he *sessionstore.LeaseHeldError, verb string, wait time.Duration) error {
	st := he.Status
	what := fmt.Sprintf("session %s is held by a live process", he.ID)
	if h := st.Holder; h != nil {
		what = fmt.Sprintf("session %s is held by %s (generation %d, heartbeat %s ago)",
			he.ID, holderText(h), st.Generation, st.HeartbeatAge.Round(time.Millisecond))
	}
	if wait > 0 {
		return fmt.Errorf("%s, still after waiting %s; the holder is alive: stop it, or wait longer", what, wait)
	}
	return fmt.Errorf("%s; the holder is alive: stop it first, or %s with --wait DURATION", what, verb)
}
