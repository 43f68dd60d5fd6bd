package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const verifyDoc = `
Checks every record of the given sessions (all sessions when none is given):
checksum and framing, the revision, generation and time sequence, that each
snapshot decodes and restores, that the bytes after the last record are only
an uncommitted tail, and that the summary agrees with the records. A
session whose log is missing, or is not a regular file, is corrupt; one that
cannot be read at all (a file this user may not read) is reported as
unreadable, and verify goes on with the others. Each problem is printed
with its file and byte offset. Notes (an uncommitted tail, which the next
lease holder removes; files in forensic/) are no failure.

Verify costs one pass over the log: every record's checksum, and every
delta's, is checked at the cost of what the delta changes; full records and
the latest revision are decoded and restored, and every blob they
reference is checked once. --deep decodes and restores every revision too
(on a terminal, it first says how much that is to read).

Verify only reads, takes no lease, and is safe while agents write: a live
store never produces a false alarm.

A session written (in part) by a newer version of sessionstore is not
corrupt: its records up to the newer ones are checked, and the rest are
left to the newer version (this one does not write to such a session).

Without session IDs, verify also checks a directory store's catalog
(ROOT/.catalog/, the index listings read instead of every session): that
its bytes pass their checksums, that every entry a listing believes
describes its session's log and carries the summary the log gives, and
that no session on disk is hidden by it. The catalog is a cache, so one
that is missing, behind the sessions created or deleted since, or not
believed by listings is a note; a damaged one, or one that claims what a
log contradicts, is a problem (of the catalog alone: listings read the
sessions instead, and 'sessions reindex' rebuilds it).

It also checks the search index (ROOT/.search/): SQLite's check of every
page, and that its schema is exactly the index's (no trigger or view).
A missing index is no problem (nothing is printed); a damaged one, or one this user may not read,
is a problem (of the index alone: the next search replaces a damaged one,
and searches read the logs meanwhile).

With --retired, verify reads the packs of the retired sessions (ROOT/.retired/,
see retire) whole instead: the header, and every file against its size and
SHA-256.

Exit status: 0 when every record checks out, 3 when anything is corrupt (the
catalog and search index included) or a session or the search index cannot be read, 4 when nothing is corrupt but some records were
written by a newer version, 1 when an error kept verify from checking (no
store, an unknown session), 2 on a usage error.`

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("verify", verifyDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	quiet := c.fs.Bool("quiet", false, "print only sessions with problems")
	deep := c.fs.Bool("deep", false, "decode and restore every revision, not only full records and the latest (slower: the sum of every revision's size)")
	retired := c.fs.Bool("retired", false, "check the retired sessions' packs instead (see retire): every member against its checksum")
	names, code, ok := c.parseIDs(args, 0)
	if !ok {
		return code
	}
	if *retired {
		return c.verifyRetired(ctx, names)
	}
	return c.withSessions(ctx, names, func(st sessionstore.Store, ids []session.SessionID) int {
		if *deep && cli.IsTerminal(stderr) {
			deepEstimate(ctx, st, ids, stderr)
		}
		rep, err := sessionstore.VerifyWith(ctx, st, sessionstore.VerifyOptions{Deep: *deep}, ids...)
		if err != nil {
			return c.fail(err)
		}
		whole := len(names) == 0
		crep, err := verifyIndex(ctx, st, whole, catalogVerifier.VerifyCatalog)
		if err != nil {
			return c.fail(err)
		}
		srep, err := verifyIndex(ctx, st, whole, searchVerifier.VerifySearch)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			if rep.Sessions == nil {
				rep.Sessions = []sessionstore.SessionVerifyReport{}
			}
			out := struct {
				sessionstore.VerifyReport
				Catalog *maintenance.CatalogVerifyReport `json:"catalog,omitempty"`
				Search  *jsonlstore.SearchVerifyReport   `json:"search_index,omitempty"`
			}{rep, crep, srep}
			if err := writeJSON(stdout, out); err != nil {
				return c.fail(err)
			}
		} else {
			p := cli.NewPalette(stdout)
			printVerify(stdout, &rep, *quiet, p)
			if crep != nil {
				printCatalogVerify(stdout, crep, *quiet, p)
			}
			if srep != nil {
				printSearchVerify(stdout, srep, *quiet, p)
			}
		}
		switch {
		case !rep.OK() || (crep != nil && !crep.OK()) || (srep != nil && !srep.OK()):
			return exitCorrupt
		case rep.NewerCount() > 0:
			return exitNewer
		}
		return exitOK
	})
}

func printVerify(w io.Writer, rep *sessionstore.VerifyReport, quiet bool, p cli.Palette) {
	bad := len(rep.Unreadable)
	printUnreadable(w, rep.Unreadable)
	for i := range rep.Sessions {
		sr := &rep.Sessions[i]
		if !sr.OK() {
			bad++
		} else if quiet {
			continue
		}
		status := p.Good("ok")
		switch {
		case !sr.OK():
			status = p.Bad("CORRUPT")
		case sr.Newer != nil:
			status = p.Wait("written by a newer version")
		}
		fmt.Fprintf(w, "%s: %s (%s", cli.Escape(string(sr.ID)), status, cli.Plural(sr.Records, "sound record"))
		if sr.Revision > 0 {
			fmt.Fprintf(w, ", revisions 1-%d", sr.Revision)
		}
		fmt.Fprintln(w, ")")
		for _, f := range sr.Problems {
			fmt.Fprintf(w, "  problem: %s\n", cli.Escape(f.String()))
		}
		if sr.Newer != nil {
			fmt.Fprintf(w, "  newer: %s\n", cli.Escape(sr.Newer.String()))
		}
		for _, f := range sr.Notes {
			fmt.Fprintf(w, "  note: %s\n", cli.Escape(f.String()))
		}
	}
	verified := cli.Plural(len(rep.Sessions), "session") + " verified"
	if n := len(rep.Unreadable); n > 0 {
		fmt.Fprintf(w, "%s: %d corrupt; %d could not be read\n", verified, bad-n, n)
		return
	}
	if bad > 0 {
		fmt.Fprintf(w, "%s: %d corrupt; 'sessions repair ID' explains the way out\n", verified, bad)
		return
	}
	if n := rep.NewerCount(); n > 0 {
		fmt.Fprintf(w, "%s: none corrupt; %d written (in part) by a newer version, checked up to its records\n", verified, n)
		return
	}
	fmt.Fprintf(w, "%s: all sound\n", verified)
}

// verifyIndex is the report of check, a check of an index the store
// keeps beside its sessions (V: catalogVerifier, searchVerifier), when
// the whole store is verified and st keeps that index; nil otherwise.
func verifyIndex[V, R any](ctx context.Context, st sessionstore.Store, whole bool, check func(V, context.Context) (R, error)) (*R, error) {
	v, ok := st.(V)
	if !ok || !whole {
		return nil, nil
	}
	r, err := check(v, ctx)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// catalogVerifier is a store that keeps a catalog to check (jsonlstore).
type catalogVerifier interface {
	VerifyCatalog(ctx context.Context) (maintenance.CatalogVerifyReport, error)
}

// printCatalogVerify prints what VerifyCatalog found: a line of the
// catalog's state, its problems and (unless quiet) its notes.
func printCatalogVerify(w io.Writer, rep *maintenance.CatalogVerifyReport, quiet bool, p cli.Palette) {
	if quiet && rep.OK() {
		return
	}
	switch rep.State {
	case maintenance.CatalogCurrent:
		fmt.Fprintf(w, "catalog: %s (%s, %d checked against their logs)\n", p.Good("current"), entriesOf(rep.Entries), rep.Checked)
	case maintenance.CatalogDamaged:
		fmt.Fprintf(w, "catalog: %s (%s, %d checked against their logs)\n", p.Bad("DAMAGED"), entriesOf(rep.Entries), rep.Checked)
	default:
		fmt.Fprintf(w, "catalog: %s\n", p.Wait(string(rep.State)))
	}
	printFindings(w, rep.Problems, rep.Notes, quiet)
	if !rep.OK() {
		fmt.Fprintln(w, "catalog damaged: no session is harmed (listings read the sessions instead); 'sessions reindex' rebuilds it")
	}
}

// searchVerifier is a store that keeps a search index file to check
// (jsonlstore).
type searchVerifier interface {
	VerifySearch(ctx context.Context) (jsonlstore.SearchVerifyReport, error)
}

// printSearchVerify prints what VerifySearch found: a line of the index's
// state, its problems and (unless quiet) its notes; nothing when there is
// no index.
func printSearchVerify(w io.Writer, rep *jsonlstore.SearchVerifyReport, quiet bool, p cli.Palette) {
	if quiet && rep.OK() || rep.State == jsonlstore.SearchIndexMissing {
		return // a store never searched has none: nothing to say (--json says it)
	}
	switch rep.State {
	case jsonlstore.SearchIndexSound:
		fmt.Fprintf(w, "search index: %s (%s)\n", p.Good("sound"), cli.Plural(rep.Sessions, "session"))
	case jsonlstore.SearchIndexDamaged:
		fmt.Fprintf(w, "search index: %s\n", p.Bad("DAMAGED"))
	case jsonlstore.SearchIndexUnreadable:
		fmt.Fprintf(w, "search index: %s\n", p.Bad("UNREADABLE"))
	default:
		fmt.Fprintf(w, "search index: %s\n", p.Wait(string(rep.State)))
	}
	printFindings(w, rep.Problems, rep.Notes, quiet)
	if rep.State == jsonlstore.SearchIndexDamaged && !rep.OK() {
		fmt.Fprintln(w, "search index damaged: no session is harmed; the next search, or 'sessions reindex', replaces it")
	}
}

// deepEstimate says on w how much a deep verification decodes: the
// revisions of the sessions and the bytes of their snapshots, estimated
// from the listing (a growing session's revisions average half its latest
// snapshot, which a delta log holds about two thirds of its size), at
// about 100 MB/s.
func deepEstimate(ctx context.Context, st sessionstore.Store, ids []session.SessionID, w io.Writer) {
	page, err := st.List(ctx, summary.Query{Limit: summary.MaxLimit})
	if err != nil {
		return
	}
	want := map[session.SessionID]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var revs uint64
	var bytes int64
	for _, s := range page.Items {
		if len(ids) == 0 || want[s.ID] {
			revs += s.Revision
			bytes += int64(min(s.Revision, 1<<32)) * s.Sizes.LogBytes / 3
		}
	}
	fmt.Fprintf(w, "sessions verify --deep: decoding %d revisions, up to about %s; at about 100 MB/s that takes up to %s\n",
		revs, cli.HumanBytes(bytes), (time.Duration(bytes/100e6+1) * time.Second))
}

func entriesOf(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// printFindings prints a check's problems and, unless quiet, its notes,
// each on a line of its own under the check's state.
func printFindings(w io.Writer, problems, notes []string, quiet bool) {
	for _, s := range problems {
		fmt.Fprintf(w, "  problem: %s\n", cli.Escape(s))
	}
	if !quiet {
		for _, s := range notes {
			fmt.Fprintf(w, "  note: %s\n", cli.Escape(s))
		}
	}
}
