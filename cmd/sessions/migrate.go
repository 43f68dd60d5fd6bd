package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const migrateUsage = "--from DIR|DSN --to DSN|DIR [ID...] [--json]  |  --schema --to DSN"

const migrateDoc = `
Copies sessions between a directory store and a PostgreSQL store (a
postgres:// URL), in either direction, or between two databases: every
record of every session (or of the sessions named), verbatim, archived
revisions included, and every blob (part content kept out of line) the
records reference. Then it verifies each copied session: the record lines
on both sides are the same bytes, every blob read back from the
destination has the SHA-256 its name says, and both stores export the
same bytes.
--from defaults to the store (--dir, $SESSIONSTORE_DIR, the default
directory).

A PostgreSQL destination is migrated to this program's schema first; with
--schema, that is all migrate does (the step a deployment runs before its
agents open the store). A session that already exists at the destination is
an error: nothing is overwritten. Copied sessions start with a free lease,
and their next holder gets a generation above every one in their records.
A session that fails to copy (a damaged log, a file this user may not read)
is reported and the others are copied; the exit status is then 1.

Record lines are read as every reader reads them (each checksum checked,
archives included) and copied as they are stored, blobs checked against
their references; each side's Import checks every record again (a blob
the source lacks is corruption: the session is not copied) and creates the
session whole or not at all (a
directory store as it creates any session: a temporary directory, synced,
renamed into place). Copy a store no agent is writing: a session that
changes during its copy fails verification.`

// migrateReport is the --json output of migrate.
type migrateReport struct {
	From     string                 `json:"from"`
	To       string                 `json:"to"`
	Schema   *pgstore.MigrateReport `json:"schema,omitempty"`
	Sessions []migratedSession      `json:"sessions"`
	// Failed lists the sessions that could not be copied, and why.
	Failed []summary.Unreadable `json:"failed,omitempty"`
}

type migratedSession struct {
	ID      session.SessionID `json:"id"`
	Records int               `json:"records"`
	// Digest is the SHA-256 of the session's record lines, the same on
	// both sides.
	Digest string `json:"sha256"`
	// Blobs is the number of blobs copied (each content once).
	Blobs int `json:"blobs"`
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("migrate", migrateDoc, stdout, stderr)
	from := c.fs.String("from", "", "the source store: a `directory` or a postgres:// URL (default: the store)")
	to := c.fs.String("to", "", "the destination store: a postgres:// URL or a `directory`")
	schemaOnly := c.fs.Bool("schema", false, "only migrate the --to database's schema")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	names, code, ok := c.parseIDs(args, 0)
	if !ok {
		return code
	}
	if *to == "" {
		return c.usageError("--to is required")
	}
	if *schemaOnly {
		if !cli.IsDSN(*to) || *from != "" || len(names) > 0 {
			return c.usageError("--schema takes only --to, a postgres:// URL")
		}
		rep, err := pgstore.Migrate(ctx, *to)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			return c.printJSON(rep)
		}
		fmt.Fprintf(stdout, "schema of %s: version %d → %d (%s applied)\n", cli.Location(*to), rep.From, rep.To, cli.Plural(len(rep.Applied), "migration"))
		return exitOK
	}
	if *from == "" {
		loc, err := c.store()
		if err != nil {
			return c.fail(err)
		}
		*from = loc
	}
	if !cli.IsDSN(*from) && !cli.IsDSN(*to) {
		return c.usageError("one side must be a postgres:// URL (to copy a directory store, use 'sessions backup')")
	}

	rep := migrateReport{From: cli.Location(*from), To: cli.Location(*to), Sessions: []migratedSession{}}
	src, err := c.openSide(ctx, *from, false)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = src.Close() }() // read-only use
	if cli.IsDSN(*to) {
		// The destination's schema first: Open refuses an unmigrated one.
		schema, err := pgstore.Migrate(ctx, *to)
		if err != nil {
			return c.fail(err)
		}
		rep.Schema = &schema
	}
	dst, err := c.openSide(ctx, *to, true)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = dst.Close() }() // every copy was durable when Import returned
	ids, err := resolveAll(ctx, src, names)
	if err != nil {
		return c.fail(err)
	}
	if len(ids) == 0 {
		// Every session, corrupt ones included: a migration that left one
		// out silently would not be a copy.
		if ids, err = src.IDs(ctx); err != nil {
			return c.fail(err)
		}
	}
	all := len(names) == 0
	for _, id := range ids {
		if ctx.Err() != nil {
			return c.fail(fmt.Errorf("%w (%d sessions copied)", ctx.Err(), len(rep.Sessions)))
		}
		m, err := migrateSession(ctx, src, dst, id)
		switch {
		case all && errors.Is(err, sessionstore.ErrNotFound):
			continue // deleted meanwhile, or a directory that holds no session
		case err != nil:
			// Reported, and the others go on.
			rep.Failed = append(rep.Failed, summary.UnreadableOf(id, err))
			c.fail(fmt.Errorf("session %s: %w", id, err))
			continue
		}
		rep.Sessions = append(rep.Sessions, m)
		if !*asJSON {
			fmt.Fprintf(stdout, "%s: %s%s copied, verified (sha256 %s)\n", id, cli.Plural(m.Records, "record"), blobsNote(m.Blobs), m.Digest[:16])
		}
	}
	code = exitOK
	if len(rep.Failed) > 0 {
		code = exitFail
	}
	if *asJSON {
		if jc := c.printJSON(rep); jc != exitOK {
			return jc
		}
		return code
	}
	if code != exitOK {
		fmt.Fprintf(stdout, "%s migrated from %s to %s; %d could NOT be copied (see above)\n",
			cli.Plural(len(rep.Sessions), "session"), cli.Escape(rep.From), cli.Escape(rep.To), len(rep.Failed))
		return code
	}
	fmt.Fprintf(stdout, "%s migrated from %s to %s; both sides match byte for byte\n",
		cli.Plural(len(rep.Sessions), "session"), cli.Escape(rep.From), cli.Escape(rep.To))
	return exitOK
}

// blobsNote says how many blobs came with the records.
func blobsNote(n int) string {
	if n == 0 {
		return ""
	}
	return " and " + cli.Plural(n, "blob")
}

// lineStore is a store migrate copies between: both adapters keep a
// session as the record lines of one format (FORMAT.md) and the blobs
// they reference, read them out verbatim and import them whole.
type lineStore interface {
	sessionstore.Store
	// RecordLines yields the session's record lines, each with its
	// newline, as stored, each checked.
	RecordLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error]
	// Import creates the session from its record lines and the blobs they
	// reference, whole or not at all.
	Import(ctx context.Context, id session.SessionID, lines iter.Seq2[[]byte, error], blobs sessionstore.BlobSource) (int, error)
}

var (
	_ lineStore = (*jsonlstore.Store)(nil)
	_ lineStore = (*pgstore.Store)(nil)
)

// openSide opens one end of a migration. A directory destination is
// created when missing; a source must exist.
func (c *sub) openSide(ctx context.Context, spec string, create bool) (lineStore, error) {
	if cli.IsDSN(spec) {
		return openPG(ctx, spec)
	}
	return c.openDir(spec, create)
}

// migrateSession copies one session and verifies the copy.
func migrateSession(ctx context.Context, src, dst lineStore, id session.SessionID) (migratedSession, error) {
	m := migratedSession{ID: id}
	h := sha256.New()
	var blobs []session.ContentRef // what Import asked for: one per content
	n, err := dst.Import(ctx, id, func(yield func([]byte, error) bool) {
		for line, err := range src.RecordLines(ctx, id) {
			if err == nil {
				h.Write(line)
			}
			if !yield(line, err) || err != nil {
				return
			}
		}
	}, func(ref session.ContentRef) ([]byte, error) {
		blobs = append(blobs, ref)
		return src.ReadBlob(ctx, id, ref)
	})
	if err != nil {
		return m, err
	}
	m.Records, m.Digest, m.Blobs = n, hex.EncodeToString(h.Sum(nil)), len(blobs)

	// Verify: the destination's lines, read back, and both exports.
	back := sha256.New()
	var count int
	for line, err := range dst.RecordLines(ctx, id) {
		if err != nil {
			return m, fmt.Errorf("verify the copy: %w", err)
		}
		back.Write(line)
		count++
	}
	if count != n || !bytes.Equal(back.Sum(nil), h.Sum(nil)) {
		return m, errors.New("verify the copy: its record lines differ from the source's")
	}
	// Each blob, read back, is the content its name says (its hash
	// computed here, not taken from the store).
	for _, ref := range blobs {
		b, err := dst.ReadBlob(ctx, id, ref)
		if err != nil {
			return m, fmt.Errorf("verify the copy: %w", err)
		}
		if err := blob.Check(ref, b); err != nil {
			return m, fmt.Errorf("verify the copy: blob %s differs from the source's: %w", ref.SHA256, err)
		}
	}
	srcExport, err := exportDigest(ctx, src, id)
	if err != nil {
		return m, err
	}
	dstExport, err := exportDigest(ctx, dst, id)
	if err != nil {
		return m, fmt.Errorf("verify the copy: %w", err)
	}
	if srcExport != dstExport {
		return m, errors.New("verify the copy: the two stores export different bytes (did the session change during the copy?)")
	}
	return m, nil
}

// exportDigest is the SHA-256 of the store's export of the session.
func exportDigest(ctx context.Context, st sessionstore.Store, id session.SessionID) (string, error) {
	h := sha256.New()
	err := sessionstore.Export(ctx, st, id, h, false)
	return hex.EncodeToString(h.Sum(nil)), err
}
