package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
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
revisions included. Then it verifies each copied session: the record lines
on both sides are the same bytes, and both stores export the same bytes.
--from defaults to the store (--dir, $SESSIONSTORE_DIR, the default
directory).

A PostgreSQL destination is migrated to this program's schema first; with
--schema, that is all migrate does (the step a deployment runs before its
agents open the store). A session that already exists at the destination is
an error: nothing is overwritten. Copied sessions start with a free lease,
and their next holder gets a generation above every one in their records.
A session that fails to copy (a damaged log, a file this user may not read)
is reported and the others are copied; the exit status is then 1.

From a directory, record lines are read as every reader reads them (each
checksum checked, archives included) and copied as they are stored; into a
directory, each session is written as the file store creates one
(a temporary directory, fsynced, renamed into place). Copy a store no agent
is writing: a session that changes during its copy fails verification.`

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
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("migrate", migrateDoc, stdout, stderr)
	from := c.fs.String("from", "", "the source store: a `directory` or a postgres:// URL (default: the store)")
	to := c.fs.String("to", "", "the destination store: a postgres:// URL or a `directory`")
	schemaOnly := c.fs.Bool("schema", false, "only migrate the --to database's schema")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	pos, code, ok := c.parse(args, 0, -1)
	if !ok {
		return code
	}
	if *to == "" {
		return c.usageError("--to is required")
	}
	if *schemaOnly {
		if !isDSN(*to) || *from != "" || len(pos) > 0 {
			return c.usageError("--schema takes only --to, a postgres:// URL")
		}
		rep, err := pgstore.Migrate(ctx, *to)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			if err := writeJSON(stdout, rep); err != nil {
				return c.fail(err)
			}
			return exitOK
		}
		fmt.Fprintf(stdout, "schema of %s: version %d → %d (%d migrations applied)\n", redactDSN(*to), rep.From, rep.To, len(rep.Applied))
		return exitOK
	}
	if *from == "" {
		if dsn, ok := c.pgDSN(); ok {
			*from = dsn
		} else {
			dir, err := storeDir(c.dir)
			if err != nil {
				return c.fail(err)
			}
			*from = dir
		}
	}
	if !isDSN(*from) && !isDSN(*to) {
		return c.usageError("one side must be a postgres:// URL (to copy a directory store, use 'sessions backup')")
	}
	var ids []session.SessionID
	for _, p := range pos {
		id, err := sessionID(p)
		if err != nil {
			return c.usageError("%v", err)
		}
		ids = append(ids, id)
	}

	rep := migrateReport{From: redactDSN(*from), To: redactDSN(*to), Sessions: []migratedSession{}}
	if !isDSN(*from) {
		rep.From = *from
	}
	if !isDSN(*to) {
		rep.To = *to
	}
	src, err := openSide(ctx, *from, false)
	if err != nil {
		return c.fail(err)
	}
	defer src.close()
	if isDSN(*to) {
		// The destination's schema first: Open refuses an unmigrated one.
		schema, err := pgstore.Migrate(ctx, *to)
		if err != nil {
			return c.fail(err)
		}
		rep.Schema = &schema
	}
	dst, err := openSide(ctx, *to, true)
	if err != nil {
		return c.fail(err)
	}
	defer dst.close()

	if len(ids) == 0 {
		if ids, err = src.ids(ctx); err != nil {
			return c.fail(err)
		}
	}
	all := len(pos) == 0
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
			fmt.Fprintf(stdout, "%s: %d records copied, verified (sha256 %s)\n", id, m.Records, m.Digest[:16])
		}
	}
	code = exitOK
	if len(rep.Failed) > 0 {
		code = exitFail
	}
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return c.fail(err)
		}
		return code
	}
	if code != exitOK {
		fmt.Fprintf(stdout, "%d sessions migrated from %s to %s; %d could NOT be copied (see above)\n", len(rep.Sessions), rep.From, rep.To, len(rep.Failed))
		return code
	}
	fmt.Fprintf(stdout, "%d sessions migrated from %s to %s; both sides match byte for byte\n", len(rep.Sessions), rep.From, rep.To)
	return exitOK
}

// migrateSession copies one session and verifies the copy.
func migrateSession(ctx context.Context, src, dst *side, id session.SessionID) (migratedSession, error) {
	m := migratedSession{ID: id}
	h := sha256.New()
	n, err := dst.write(ctx, id, func(yield func([]byte, error) bool) {
		for line, err := range src.lines(ctx, id) {
			if err == nil {
				h.Write(line)
			}
			if !yield(line, err) || err != nil {
				return
			}
		}
	})
	if err != nil {
		return m, err
	}
	m.Records, m.Digest = n, hex.EncodeToString(h.Sum(nil))

	// Verify: the destination's stored lines, read back, and both exports.
	back := sha256.New()
	var count int
	for line, err := range dst.storedLines(ctx, id) {
		if err != nil {
			return m, fmt.Errorf("verify the copy: %w", err)
		}
		back.Write(line)
		count++
	}
	if count != n || !bytes.Equal(back.Sum(nil), h.Sum(nil)) {
		return m, errors.New("verify the copy: its record lines differ from the source's")
	}
	srcExport, err := src.exportDigest(ctx, id)
	if err != nil {
		return m, err
	}
	dstExport, err := dst.exportDigest(ctx, id)
	if err != nil {
		return m, fmt.Errorf("verify the copy: %w", err)
	}
	if srcExport != dstExport {
		return m, errors.New("verify the copy: the two stores export different bytes (did the session change during the copy?)")
	}
	return m, nil
}

// side is one end of a migration: a directory store or a database.
type side struct {
	dir string // the directory, for a directory store
	js  *jsonlstore.Store
	pg  *pgstore.Store
}

func openSide(ctx context.Context, spec string, create bool) (*side, error) {
	if isDSN(spec) {
		st, err := pgstore.Open(ctx, spec, pgstore.Options{})
		if errors.Is(err, pgstore.ErrSchemaOutdated) {
			err = fmt.Errorf("%w\nrun 'sessions migrate --schema --to DSN' first", err)
		}
		if err != nil {
			return nil, err
		}
		return &side{pg: st}, nil
	}
	if create {
		if err := os.MkdirAll(spec, 0o700); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(spec); err != nil {
		return nil, fmt.Errorf("no store at %s: %w", spec, err)
	}
	st, err := jsonlstore.Open(spec, jsonlstore.Options{})
	if err != nil {
		return nil, err
	}
	return &side{dir: spec, js: st}, nil
}

func (s *side) close() {
	if s.pg != nil {
		_ = s.pg.Close()
	} else {
		_ = s.js.Close()
	}
}

// ids lists every session, in ID order. A directory store's sessions are
// its directories named by valid IDs (FORMAT.md), corrupt ones included:
// a migration that silently left one out would not be a copy.
func (s *side) ids(ctx context.Context) ([]session.SessionID, error) {
	if s.pg != nil {
		return s.pg.IDs(ctx)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var ids []session.SessionID
	for _, e := range entries {
		id := session.SessionID(e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && sessionstore.ValidateID(id) == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// lines yields the session's record lines, each with its newline.
func (s *side) lines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error] {
	if s.pg != nil {
		return s.storedLines(ctx, id)
	}
	return s.js.RecordLines(ctx, id)
}

// storedLines yields the lines as the store holds them: the database's
// rows, or a directory session's log.jsonl as written by write.
func (s *side) storedLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error] {
	if s.pg != nil {
		return func(yield func([]byte, error) bool) {
			for r, err := range s.pg.Records(ctx, id) {
				if !yield(r.Line, err) || err != nil {
					return
				}
			}
		}
	}
	return func(yield func([]byte, error) bool) {
		f, err := os.Open(filepath.Join(s.dir, string(id), "log.jsonl"))
		if err != nil {
			yield(nil, err)
			return
		}
		defer func() { _ = f.Close() }() // read-only
		br := bufio.NewReaderSize(f, 1<<20)
		for {
			l, err := br.ReadBytes('\n')
			if len(l) == 0 && errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("log.jsonl ends without a newline: %w", err))
				return
			}
			if !yield(l, nil) {
				return
			}
		}
	}
}

// exportDigest is the SHA-256 of the store's export of the session.
func (s *side) exportDigest(ctx context.Context, id session.SessionID) (string, error) {
	h := sha256.New()
	var err error
	if s.pg != nil {
		err = s.pg.Export(ctx, id, h, false)
	} else {
		err = s.js.Export(ctx, id, h, false)
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

// write creates session id at this side from lines.
func (s *side) write(ctx context.Context, id session.SessionID, lines iter.Seq2[[]byte, error]) (int, error) {
	if s.pg != nil {
		return s.pg.Import(ctx, id, lines)
	}
	return writeDirSession(ctx, s.dir, id, lines)
}

// writeDirSession creates session id in the directory store at root, as
// the file store creates a session (FORMAT.md, "Creation and deletion"):
// in .tmp-<id>-<random>/, its log written and fsynced, its lease record
// written by fslease (released, at a generation above the records'), the
// directory fsynced, then renamed into place without replacing anything,
// and the root fsynced.
func writeDirSession(ctx context.Context, root string, id session.SessionID, lines iter.Seq2[[]byte, error]) (n int, err error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.Close() }() // only the root handle: the files below it are synced and closed on their own
	fsys := vfs.OS(r)
	if _, err := fsys.Lstat(string(id)); err == nil {
		return 0, fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".tmp-" + string(id) + "-" + hex.EncodeToString(rnd[:])
	if err := fsys.Mkdir(tmp, 0o700); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = fsys.RemoveAll(tmp)
		}
	}()
	f, err := fsys.OpenFile(tmp+"/log.jsonl", syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	var lastGen uint64
	for line, lerr := range lines {
		if lerr != nil {
			_ = f.Close()
			return 0, lerr
		}
		if len(line) == 0 || line[len(line)-1] != '\n' {
			_ = f.Close()
			return 0, fmt.Errorf("record %d: a line without its newline", n+1)
		}
		m, _, perr := record.Parse(line[:len(line)-1], len(line))
		if perr != nil {
			_ = f.Close()
			return 0, fmt.Errorf("record %d: %w", n+1, perr)
		}
		if _, err := f.Write(line); err != nil {
			_ = f.Close()
			return 0, err
		}
		lastGen = m.Gen
		n++
	}
	if n == 0 {
		_ = f.Close()
		return 0, errors.New("no records")
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	lease, err := fslease.Acquire(ctx, filepath.Join(root, tmp), fslease.Options{Label: "sessions-migrate", MinGeneration: lastGen})
	if err != nil {
		return 0, err
	}
	if err := lease.Release(ctx); err != nil {
		return 0, err
	}
	if err := fsys.SyncDir(tmp); err != nil {
		return 0, err
	}
	if err := fsys.RenameNoReplace(tmp, string(id)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
		}
		return 0, err
	}
	return n, fsys.SyncDir(".")
}
