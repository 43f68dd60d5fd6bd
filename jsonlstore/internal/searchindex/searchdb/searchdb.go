package searchdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
)

// Version is the index's format version (PRAGMA user_version). Version
// 2 is version 1 with FTS5's automerge at 16 (see schema).
const Version = 2

var (
	// ErrMissing reports an index file that does not exist (Open without
	// Create).
	ErrMissing = errors.New("searchdb: no index")
	// ErrBusy reports a write that would have waited for another
	// process's (NoWait).
	ErrBusy = errors.New("searchdb: index busy")
	// ErrDamaged reports an index that is not a database of this version
	// (damaged, torn, another program's): rebuild it.
	ErrDamaged = errors.New("searchdb: index damaged or of another version")
	// ErrOtherVersion reports an index of another version (PRAGMA
	// user_version); it also matches ErrDamaged.
	ErrOtherVersion = fmt.Errorf("%w: another version", ErrDamaged)
	// ErrSlow reports an operation that ran past its time limit
	// (OpenOptions.Limit, with what its work justifies beyond it): it was
	// interrupted and did nothing. An index that holds what it should
	// never takes that long.
	ErrSlow = errors.New("searchdb: index operation took too long")
)

// DefaultLimit is how long one operation on the index (a search's read,
// one Apply, opening and checking it) may take beyond what its work
// justifies (an Apply: perMiB for each MiB of text it adds).
const DefaultLimit = 30 * time.Second

// perMiB is the time an Apply may take per MiB of text it adds, beyond
// the limit: FTS5 indexes several MiB a second on a slow machine.
const perMiB = time.Second

// schema makes a new index. FTS5 writes each transaction's documents as
// a new segment and merges segments as they pile up: with its default
// (automerge 4) every write merged a share of the index's lower levels
// too, and since the index has one writer at a time (.search/writer),
// under many writers that merging was about 40% of the CPU of their
// index writes, all of it with the writer lock held (W8). With automerge
// 16 a level is merged when 16 segments are on it (FTS5's crisismerge,
// by the write that puts the 16th there): about half the merging, for
// a few more segments for a query to look in.
const schema = `
CREATE TABLE sessions (
	sid       INTEGER PRIMARY KEY,
	id        TEXT    NOT NULL UNIQUE,
	rev       INTEGER NOT NULL,
	messages  INTEGER NOT NULL,
	digest    BLOB    NOT NULL,
	title     TEXT    NOT NULL,
	title_rev INTEGER NOT NULL,
	updated   INTEGER NOT NULL,
	project   TEXT    NOT NULL,
	labels    TEXT    NOT NULL, -- the labels as JSON, to tell whether they changed
	log_dev   INTEGER NOT NULL,
	log_ino   INTEGER NOT NULL,
	log_size  INTEGER NOT NULL,
	log_mtime INTEGER NOT NULL
);
CREATE INDEX sessions_project ON sessions (project);
CREATE TABLE labels (
	sid   INTEGER NOT NULL,
	key   TEXT    NOT NULL,
	value TEXT    NOT NULL,
	PRIMARY KEY (sid, key)
) WITHOUT ROWID;
CREATE INDEX labels_kv ON labels (key, value);
CREATE TABLE msgs (
	rowid INTEGER PRIMARY KEY,
	sid   INTEGER NOT NULL,
	msg   INTEGER NOT NULL,
	role  TEXT    NOT NULL,
	rev   INTEGER NOT NULL
);
CREATE INDEX msgs_sid ON msgs (sid, msg);
CREATE VIRTUAL TABLE docs USING fts5(title, text, tool, tokenize = "unicode61 remove_diacritics 0 categories 'L* N* Co M*'");
INSERT INTO docs(docs, rank) VALUES ('automerge', 16);
PRAGMA user_version = 2;
`

// The statements of every append's index write, prepared once.
const (
	selectRowSQL = "SELECT sid, rev, messages, title, title_rev, digest, labels FROM sessions WHERE id = ?"
	updateRowSQL = `UPDATE sessions SET rev = ?, messages = ?, digest = ?, title = ?, title_rev = ?, updated = ?,
			project = ?, labels = ?, log_dev = ?, log_ino = ?, log_size = ?, log_mtime = ? WHERE sid = ?`
	insertRowSQL = `INSERT INTO sessions (id, rev, messages, digest, title, title_rev, updated, project, labels,
			log_dev, log_ino, log_size, log_mtime) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertMsgSQL = "INSERT INTO msgs (sid, msg, role, rev) VALUES (?, ?, ?, ?)"
	insertDocSQL = "INSERT INTO docs (rowid, title, text, tool) VALUES (?, ?, ?, ?)"
)

var writeStatements = []string{selectRowSQL, updateRowSQL, insertRowSQL, insertMsgSQL, insertDocSQL}

// Proof is the state of a session's log when the index read it: its
// identity, size and modification time (nanoseconds).
type Proof struct {
	Dev, Ino    uint64
	Size, Mtime int64
}

// State is what the index holds of one session.
type State struct {
	ID       session.SessionID
	Title    string
	Rev      uint64
	Messages int
	Digest   fulltext.Digest
	Proof    Proof
	// Updated is revision Rev's record time; Project and Labels are the
	// session's at Rev (the project as filters compare it).
	Updated time.Time
	Project string
	Labels  map[string]string
}

// Message is one message to index.
type Message struct {
	Index int
	Rev   uint64
	Doc   fulltext.Doc
}

// Update brings one session's row from the state it names to a new one.
type Update struct {
	ID session.SessionID
	// Delete removes the session (the fields below are not read).
	Delete bool
	// Reset replaces whatever the index holds of the session; otherwise
	// the update applies only when the row holds revision FromRev with
	// FromMessages messages (0 and 0: no row).
	Reset        bool
	FromRev      uint64
	FromMessages int
	// Rev is the revision the row holds after the update, Messages its
	// messages' count and Digest theirs; Add are the messages after
	// FromMessages (all of them with Reset).
	Rev      uint64
	Messages int
	Digest   fulltext.Digest
	Add      []Message
	// Extend computes Digest: the row's, extended by Add's docs.
	Extend bool
	// Title is the session's title at Rev; TitleRev the revision it
	// appeared at (kept when the title is unchanged).
	Title    string
	TitleRev uint64
	Updated  time.Time
	Project  string
	Labels   map[string]string
	Proof    Proof
}

// Wait says how long a write waits for another process's.
type Wait time.Duration

// NoWait makes a write fail at once with ErrBusy.
const NoWait Wait = 0

// DB is an open index. It is safe for concurrent use (one connection,
// calls serialized).
type DB struct {
	db   *sql.DB
	path string

	limit time.Duration // of one operation (OpenOptions.Limit)

	mu    sync.Mutex // guards stmts and wait
	stmts map[string]*sql.Stmt
	wait  Wait // the connection's busy timeout; -1: not set

	writer Writer // OpenOptions.Writer
}

// Writer takes the lock that makes a process the index's one writer,
// waiting for another's as wait says (NoWait: not at all; ErrBusy when
// it is held); release drops it. Writers queue on it rather than on
// SQLite's write lock, whose busy handler polls with growing sleeps, so
// the next writer starts as soon as the last one ends.
type Writer func(ctx context.Context, wait Wait) (release func(), err error)

// OpenOptions tune Open.
type OpenOptions struct {
	// Create gives an empty file the index's schema (the file must
	// exist: Open never creates one).
	Create bool
	// Limit bounds each operation's time; zero is DefaultLimit.
	Limit time.Duration
	// Writer, if set, is taken before every write transaction and
	// held until it ends.
	Writer Writer
}

// Open opens the index at path, which must exist: jsonlstore makes the
// file (with the store's modes and owner) before SQLite sees it, so
// SQLite never creates a database anywhere. With Create, an empty file
// gets the schema. Before anything else, the schema is checked (see
// schema.go). Errors: ErrMissing (no file), an error matching
// fs.ErrPermission (a file or directory this user may not read or
// write: never taken for a missing or damaged index), ErrDamaged (the
// file is no index of this version, or not only one), ErrSlow, and
// others.
func Open(ctx context.Context, path string, opts OpenOptions) (*DB, error) {
	uri, err := URI(path)
	if err != nil {
		return nil, fmt.Errorf("searchdb: open %s: %w", path, err)
	}
	if err := Accessible(path); err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector{uri: uri})
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	d := &DB{db: db, path: path, stmts: map[string]*sql.Stmt{}, wait: -1, limit: opts.Limit, writer: opts.Writer}
	if d.limit <= 0 {
		d.limit = DefaultLimit
	}
	err = d.run(ctx, 0, "open", func(ctx context.Context) error { return d.init(ctx, opts.Create) })
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := d.run(ctx, 0, "prepare", d.prepare); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

// URI is the SQLite URI of the database file at path (made absolute).
// Every byte but letters, digits and "/._-~" is percent-encoded: SQLite
// ends a URI's path at "?" or "#" and decodes "%HH" in it, and the
// driver takes what follows the first "?" as its own parameters, so a
// path taken as is ("DIR/store?x/.search/index.db") would name another
// file (DIR/store) and carry parameters of the path's choosing.
func URI(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("file://") // no authority: the path follows
	for i := range len(abs) {
		c := abs[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/._-~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	// mode=rw: SQLite never creates the file. trusted_schema off: no
	// function the schema names runs unless SQLite marks it harmless;
	// cell_size_check: pages are checked as they are read (SQLite's
	// advice for files from elsewhere, with the schema check and the
	// authorizer, see schema.go). journal_size_limit: a closed index's
	// -wal is cut to nothing (it is kept, not removed by name: see
	// connector).
	b.WriteString("?mode=rw&_txlock=immediate&_defensive=1" +
		"&_pragma=trusted_schema(0)&_pragma=cell_size_check(1)" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(0)" +
		"&_pragma=journal_size_limit(4194304)")
	return b.String(), nil
}

// Accessible checks that this user may read and write the index file
// at path: ErrMissing, or an error that matches fs.ErrPermission for a
// file of another user's. SQLite says only that it cannot open such a
// file, which is not what a missing file, a damaged one, or another
// user's is.
func Accessible(path string) error {
	err := unix.Faccessat(unix.AT_FDCWD, path, unix.R_OK|unix.W_OK, unix.AT_EACCESS)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s", ErrMissing, path)
	}
	return fmt.Errorf("searchdb: open %w", &fs.PathError{Op: "access", Path: path, Err: err})
}

// connector opens the index's connections through a driver of this
// package's own (so that its hook is no other package's), each set up by
// setup before database/sql hands it out.
type connector struct{ uri string }

func (c connector) Connect(context.Context) (driver.Conn, error) { return indexDriver().Open(c.uri) }
func (c connector) Driver() driver.Driver                        { return indexDriver() }

var indexDriver = sync.OnceValue(func() *sqlite.Driver {
	drv := &sqlite.Driver{}
	drv.RegisterConnectionHook(setup)
	return drv
})

// setup sets up a new connection. Its authorizer refuses every action
// of a trigger or a view: the index has neither, and one added while the
// connection is open (after the schema was checked) runs nothing, its
// statement fails (ErrDamaged). Its -wal is never removed by name when
// it closes (PERSIST_WAL): a connection to an index since replaced
// would remove the new index's -wal, with the writes of other processes
// in it.
func setup(conn sqlite.ExecQuerierContext, _ string) error {
	a, ok := conn.(sqlite.AuthorizerRegisterer)
	if !ok {
		return errors.New("searchdb: the driver has no authorizer")
	}
	err := a.RegisterAuthorizer(func(_ sqlite.AuthorizerActionCode, _, _, _, triggerOrView string) sqlite.AuthorizerReturnCode {
		if triggerOrView != "" {
			return sqlite.AuthorizerDeny
		}
		return sqlite.AuthorizerOK
	})
	if err != nil {
		return err
	}
	fc, ok := conn.(sqlite.FileControl)
	if !ok {
		return errors.New("searchdb: the driver has no file control")
	}
	_, err = fc.FileControlPersistWAL("main", 1)
	return err
}

// run runs fn with ctx bounded by the DB's limit (and extra, for work
// that justifies more), classifying its error.
func (d *DB) run(ctx context.Context, extra time.Duration, what string, fn func(ctx context.Context) error) error {
	bctx, cancel := context.WithTimeoutCause(ctx, d.limit+extra, errOverLimit)
	defer cancel()
	err := fn(bctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(bctx), errOverLimit) {
		return fmt.Errorf("%w: %s %s: more than %s: %w", ErrSlow, what, d.path, d.limit+extra, err)
	}
	return d.classify(what, err)
}

var errOverLimit = errors.New("searchdb: over the time limit")

// init checks the version and schema, creating the schema in a new
// (empty) file.
func (d *DB) init(ctx context.Context, create bool) error {
	var v int
	err := d.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	if err != nil {
		return err
	}
	switch {
	case v == Version:
		return d.read(ctx, func(*sql.Tx) error { return nil }) // the check
	case v != 0:
		return fmt.Errorf("%w: %s has version %d, this program's is %d", ErrOtherVersion, d.path, v, Version)
	case !create:
		return fmt.Errorf("%w: %s has no schema", ErrDamaged, d.path)
	}
	if err := d.setWait(ctx, Wait(5*time.Second)); err != nil {
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // after Commit: nothing to roll back
	// Another process may have made it meanwhile.
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	switch {
	case v == Version:
		if err := checkSchema(ctx, tx); err != nil {
			return err
		}
		return tx.Commit()
	case v != 0 || n != 0:
		return fmt.Errorf("%w: %s holds objects but no version", ErrDamaged, d.path)
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	if err := checkSchema(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// classify names SQLite's errors as this package's.
func (d *DB) classify(what string, err error) error {
	if err == nil || errors.Is(err, ErrDamaged) || errors.Is(err, ErrMissing) || errors.Is(err, ErrSlow) {
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %s %s: %w", ErrBusy, what, d.path, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_FORMAT, sqlite3.SQLITE_SCHEMA, sqlite3.SQLITE_AUTH:
			// SQLITE_AUTH: the authorizer refused a trigger or view.
			return fmt.Errorf("%w: %s %s: %w", ErrDamaged, what, d.path, err)
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
			// A file or directory this user may not write (the -wal and
			// -shm are made beside the file), or a file gone since.
			if aerr := Accessible(d.path); aerr != nil {
				return aerr
			}
			if aerr := Accessible(filepath.Dir(d.path)); aerr != nil && !errors.Is(aerr, ErrMissing) {
				return aerr
			}
		case sqlite3.SQLITE_ERROR:
			if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "no such column") {
				return fmt.Errorf("%w: %s %s: %w", ErrDamaged, what, d.path, err)
			}
		}
	}
	return fmt.Errorf("searchdb: %s %s: %w", what, d.path, err)
}

func (d *DB) setWait(ctx context.Context, w Wait) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wait == w {
		return nil
	}
	_, err := d.db.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", time.Duration(w).Milliseconds()))
	if err == nil {
		d.wait = w
	}
	return err
}

// stmt returns query as Open prepared it (statements are parsed once,
// not at every append), or nil for one it did not.
func (d *DB) stmt(query string) *sql.Stmt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stmts[query]
}

// prepare prepares the statements of every write. It runs outside any
// transaction: the DB's one connection is free.
func (d *DB) prepare(ctx context.Context) error {
	for _, q := range writeStatements {
		st, err := d.db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.stmts[q] = st
		d.mu.Unlock()
	}
	return nil
}

// Close closes the index.
func (d *DB) Close() error {
	d.mu.Lock()
	for _, st := range d.stmts {
		_ = st.Close() // closing the database closes what is left
	}
	d.stmts = nil
	d.mu.Unlock()
	return d.db.Close()
}

// read runs fn in a read transaction whose schema is checked first: fn's
// statements see the schema checked (a snapshot), whatever another
// process changes meanwhile.
func (d *DB) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // read-only
	if err := checkSchema(ctx, tx); err != nil {
		return err
	}
	return fn(tx)
}

// Checkpoint copies what the -wal holds into the file and empties the
// -wal: the file is then whole by itself (a new index, before it is
// renamed into place). It fails with ErrBusy if another connection
// reads or writes.
func (d *DB) Checkpoint(ctx context.Context) error {
	return d.run(ctx, 0, "checkpoint", func(ctx context.Context) error {
		var busy, log, done int
		if err := d.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done); err != nil {
			return err
		}
		if busy != 0 {
			return fmt.Errorf("%w: checkpoint %s", ErrBusy, d.path)
		}
		return nil
	})
}

// Check checks the whole file for verification: SQLite's quick_check
// (the structure of every page, and FTS5's check of its own data) and
// the schema. The file's damage is ErrDamaged, saying what it is. It
// may take a second per 10 MiB of index beyond the DB's limit.
func (d *DB) Check(ctx context.Context) error {
	var extra time.Duration
	if fi, err := os.Stat(d.path); err == nil {
		extra = time.Duration(fi.Size()>>20) * time.Second / 10
	}
	return d.run(ctx, extra, "check", func(ctx context.Context) error {
		return d.read(ctx, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, "PRAGMA quick_check(10)")
			if err != nil {
				return err
			}
			defer func() { _ = rows.Close() }() // read-only
			var found []string
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					return err
				}
				if s != "ok" {
					found = append(found, s)
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if len(found) > 0 {
				return fmt.Errorf("%w: %s", ErrDamaged, strings.Join(found, "; "))
			}
			return nil
		})
	})
}

// wtx is a write transaction whose statements are the DB's prepared ones.
type wtx struct {
	d  *DB
	tx *sql.Tx
}

func (w *wtx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := w.d.stmt(query); st != nil {
		return w.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return w.tx.ExecContext(ctx, query, args...)
}

func (w *wtx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := w.d.stmt(query); st != nil {
		return w.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return w.tx.QueryRowContext(ctx, query, args...)
}

// Path is the index file's path.
func (d *DB) Path() string { return d.path }

// States returns what the index holds of every session.
func (d *DB) States(ctx context.Context) (map[session.SessionID]State, error) {
	return d.states(ctx, stateSQL)
}

// Proofs returns the proof of every session's row: the columns a search
// compares with the logs, no more (States of the rows it finds stale).
func (d *DB) Proofs(ctx context.Context) (map[session.SessionID]Proof, error) {
	out := map[session.SessionID]Proof{}
	err := d.run(ctx, 0, "read sessions", func(ctx context.Context) error {
		return d.read(ctx, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, "SELECT id, log_dev, log_ino, log_size, log_mtime FROM sessions")
			if err != nil {
				return err
			}
			defer func() { _ = rows.Close() }() // read-only
			for rows.Next() {
				var id session.SessionID
				var p Proof
				var dev, ino int64
				if err := rows.Scan(&id, &dev, &ino, &p.Size, &p.Mtime); err != nil {
					return err
				}
				p.Dev, p.Ino = uint64(dev), uint64(ino) //nolint:gosec // G115: SQLite stores the stat's unsigned numbers as their two's complement
				out[id] = p
			}
			return rows.Err()
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatesOf returns what the index holds of the sessions ids (those it
// has rows of).
func (d *DB) StatesOf(ctx context.Context, ids []session.SessionID) (map[session.SessionID]State, error) {
	if len(ids) == 0 {
		return map[session.SessionID]State{}, nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("searchdb: %w", err)
	}
	return d.states(ctx, stateSQL+" WHERE id IN (SELECT value FROM json_each(?))", string(b))
}

const stateSQL = "SELECT id, title, rev, messages, digest, log_dev, log_ino, log_size, log_mtime, updated, project, labels FROM sessions"

func (d *DB) states(ctx context.Context, query string, args ...any) (map[session.SessionID]State, error) {
	out := map[session.SessionID]State{}
	err := d.run(ctx, 0, "read sessions", func(ctx context.Context) error {
		return d.read(ctx, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, query, args...)
			if err != nil {
				return err
			}
			defer func() { _ = rows.Close() }() // read-only
			for rows.Next() {
				var s State
				var dig []byte
				var dev, ino, updated int64
				var labels string
				if err := rows.Scan(&s.ID, &s.Title, &s.Rev, &s.Messages, &dig, &dev, &ino, &s.Proof.Size, &s.Proof.Mtime, &updated, &s.Project, &labels); err != nil {
					return err
				}
				s.Updated = time.Unix(0, updated).UTC()
				if labels != "{}" && labels != "" {
					if err := json.Unmarshal([]byte(labels), &s.Labels); err != nil {
						return fmt.Errorf("%w: %s: labels of %s: %w", ErrDamaged, d.path, s.ID, err)
					}
				}
				s.Proof.Dev, s.Proof.Ino = uint64(dev), uint64(ino) //nolint:gosec // G115: SQLite stores the stat's unsigned numbers as their two's complement
				copy(s.Digest[:], dig)
				out[s.ID] = s
			}
			return rows.Err()
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Apply applies updates in one transaction, each only when the row
// holds the state it builds on; it reports which applied. With NoWait it
// fails at once with ErrBusy when another process writes.
func (d *DB) Apply(ctx context.Context, ups []Update, wait Wait) ([]bool, error) {
	applied := make([]bool, len(ups))
	text := 0
	for i := range ups {
		for j := range ups[i].Add {
			doc := &ups[i].Add[j].Doc
			text += len(doc.Text) + len(doc.Tool)
		}
	}
	err := d.run(ctx, time.Duration(wait)+time.Duration(text>>20)*perMiB, "update", func(ctx context.Context) error {
		return d.write(ctx, wait, func(tx *wtx) error {
			for i := range ups {
				ok, err := apply(ctx, tx, &ups[i])
				if err != nil {
					return err
				}
				applied[i] = ok
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// Delete removes sessions from the index.
func (d *DB) Delete(ctx context.Context, ids []session.SessionID, wait Wait) error {
	return d.run(ctx, time.Duration(wait), "delete", func(ctx context.Context) error {
		return d.write(ctx, wait, func(tx *wtx) error {
			for _, id := range ids {
				if err := remove(ctx, tx, id); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// write runs fn in a write transaction (waiting for another process's
// as wait says, for the Writer lock first if there is one) whose schema
// is checked first.
func (d *DB) write(ctx context.Context, wait Wait, fn func(tx *wtx) error) error {
	if d.writer != nil {
		release, err := d.writer(ctx, wait)
		if err != nil {
			return err
		}
		defer release()
	}
	if err := d.setWait(ctx, wait); err != nil {
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // after Commit: nothing to roll back
	if err := checkSchema(ctx, tx); err != nil {
		return err
	}
	if err := fn(&wtx{d: d, tx: tx}); err != nil {
		return err
	}
	return tx.Commit()
}

// apply applies one update in tx.
func apply(ctx context.Context, tx *wtx, u *Update) (bool, error) {
	if u.Delete {
		return true, remove(ctx, tx, u.ID)
	}
	var sid, rev int64
	var msgs int
	var titleRev int64
	var title string
	var dig []byte
	var labelsWas string
	err := tx.queryRow(ctx, selectRowSQL, string(u.ID)).Scan(&sid, &rev, &msgs, &title, &titleRev, &dig, &labelsWas)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	switch {
	case u.Reset:
		if exists {
			if err := remove(ctx, tx, u.ID); err != nil {
				return false, err
			}
			exists = false
		}
	case !exists && (u.FromRev != 0 || u.FromMessages != 0):
		return false, nil
	case exists && (uint64(rev) != u.FromRev || msgs != u.FromMessages): //nolint:gosec // G115: revisions are stored as they were given, below 2^63
		return false, nil
	}
	if u.Extend {
		var d fulltext.Digest
		copy(d[:], dig)
		for i := range u.Add {
			d = d.Add(&u.Add[i].Doc)
		}
		u.Digest = d
	}
	titleRevNew := u.TitleRev
	if exists && title == u.Title && titleRev > 0 {
		titleRevNew = uint64(titleRev)
	}
	p := u.Proof
	u.Project = StoredProject(u.Project) // as filters compare it
	labels := labelsText(u.Labels)
	if exists {
		_, err = tx.exec(ctx, updateRowSQL,
			int64(u.Rev), u.Messages, u.Digest[:], u.Title, int64(titleRevNew), u.Updated.UnixNano(), u.Project, labels, //nolint:gosec // G115: revisions below 2^63; dev and ino as their two's complement
			int64(p.Dev), int64(p.Ino), p.Size, p.Mtime, sid) //nolint:gosec // G115: as above
	} else {
		var res sql.Result
		res, err = tx.exec(ctx, insertRowSQL,
			string(u.ID), int64(u.Rev), u.Messages, u.Digest[:], u.Title, int64(titleRevNew), u.Updated.UnixNano(), u.Project, labels, //nolint:gosec // G115: as above
			int64(p.Dev), int64(p.Ino), p.Size, p.Mtime) //nolint:gosec // G115: as above
		if err == nil {
			sid, err = res.LastInsertId()
		}
	}
	if err != nil {
		return false, err
	}
	if !exists || labelsWas != labels {
		if _, err := tx.exec(ctx, "DELETE FROM labels WHERE sid = ?", sid); err != nil {
			return false, err
		}
		for k, v := range u.Labels {
			if _, err := tx.exec(ctx, "INSERT INTO labels (sid, key, value) VALUES (?, ?, ?)", sid, k, v); err != nil {
				return false, err
			}
		}
	}
	// The title's document, when it changed.
	if !exists || title != u.Title {
		if err := removeDocs(ctx, tx, "sid = ? AND msg = -1", sid); err != nil {
			return false, err
		}
		if u.Title != "" {
			if err := addDoc(ctx, tx, sid, -1, "", titleRevNew, [3]string{u.Title, "", ""}); err != nil {
				return false, err
			}
		}
	}
	for _, m := range u.Add {
		if err := addDoc(ctx, tx, sid, m.Index, string(m.Doc.Role), m.Rev, [3]string{"", m.Doc.Text, m.Doc.Tool}); err != nil {
			return false, err
		}
	}
	return true, nil
}

func addDoc(ctx context.Context, tx *wtx, sid int64, msg int, role string, rev uint64, cols [3]string) error {
	res, err := tx.exec(ctx, insertMsgSQL, sid, msg, role, int64(rev)) //nolint:gosec // G115: revisions below 2^63
	if err != nil {
		return err
	}
	rowid, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, insertDocSQL, rowid, cols[0], cols[1], cols[2])
	return err
}

// labelsText is the labels as JSON (keys sorted).
func labelsText(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	b, err := json.Marshal(l)
	if err != nil {
		return ""
	}
	return string(b)
}

// removeDocs removes the documents of the msgs rows where cond holds.
func removeDocs(ctx context.Context, tx *wtx, cond string, args ...any) error {
	if _, err := tx.exec(ctx, "DELETE FROM docs WHERE rowid IN (SELECT rowid FROM msgs WHERE "+cond+")", args...); err != nil {
		return err
	}
	_, err := tx.exec(ctx, "DELETE FROM msgs WHERE "+cond, args...)
	return err
}

func remove(ctx context.Context, tx *wtx, id session.SessionID) error {
	var sid int64
	err := tx.queryRow(ctx, "SELECT sid FROM sessions WHERE id = ?", string(id)).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := removeDocs(ctx, tx, "sid = ?", sid); err != nil {
		return err
	}
	for _, q := range []string{"DELETE FROM labels WHERE sid = ?", "DELETE FROM sessions WHERE sid = ?"} {
		if _, err := tx.exec(ctx, q, sid); err != nil {
			return err
		}
	}
	return nil
}
