package main

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The systems compared. Each is handed the same sessnap.Snapshot values
// and must make each one durable before returning; where a system needs
// the snapshot encoded, the encoding is part of its operation, as it is
// part of jsonlstore's Append.

// jsonlSystem is the project: everything Writer.Append does (encoding,
// checks, the write, fdatasync, the summary refresh), through the public
// API with default Options (delta records on) unless a workload compares
// other Options.
type jsonlSystem struct {
	st  *jsonlstore.Store
	w   sessionstore.Writer
	rev uint64
	log string
	off int64 // how much of the log tail has returned
}

// newJSONL opens a store under dir with opts and creates snap.ID with snap
// as revision 1 (not timed).
func newJSONL(ctx context.Context, dir string, snap sessnap.Snapshot, opts jsonlstore.Options) (*jsonlSystem, error) {
	st, err := jsonlstore.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "bench"})
	if err != nil {
		st.Close()
		return nil, err
	}
	return &jsonlSystem{st: st, w: w, rev: w.Revision(), log: filepath.Join(dir, string(snap.ID), jsonlstore.LogFile)}, nil
}

func (j *jsonlSystem) append(ctx context.Context, snap sessnap.Snapshot) error {
	rev, err := j.w.Append(ctx, j.rev, snap)
	j.rev = rev
	return err
}

// tail returns the bytes the store appended to the log since the last
// call: what the raw baseline writes.
func (j *jsonlSystem) tail() ([]byte, error) {
	f, err := os.Open(j.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, j.off, 1<<62))
	j.off += int64(len(b))
	return b, err
}

func (j *jsonlSystem) close() error {
	return errors.Join(j.w.Release(context.Background()), j.st.Close())
}

// rawSystem is the physical baseline: one write of given bytes to an
// O_APPEND descriptor, then fdatasync — what the store's append does at
// the bottom, and nothing else.
type rawSystem struct{ f *os.File }

func newRaw(path string) (*rawSystem, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &rawSystem{f: f}, nil
}

func (r *rawSystem) append(line []byte) error {
	if _, err := r.f.Write(line); err != nil {
		return err
	}
	return datasync(r.f)
}

func (r *rawSystem) close() error { return r.f.Close() }

// openSQLite opens a SQLite database in WAL mode with synchronous=FULL
// (the WAL is synced at every commit: durable when the commit returns),
// on one connection.
func openSQLite(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	var mode string
	var syncMode int
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.QueryRow("PRAGMA synchronous").Scan(&syncMode); err != nil {
		db.Close()
		return nil, err
	}
	if mode != "wal" || syncMode != 2 {
		db.Close()
		return nil, fmt.Errorf("sqlite %s: journal_mode %s synchronous %d, want wal and 2 (FULL)", path, mode, syncMode)
	}
	return db, nil
}

// sqliteRevs is SQLite with one row per revision holding the whole
// snapshot: the schema that mirrors the store's.
type sqliteRevs struct {
	db     *sql.DB
	insert *sql.Stmt
	last   *sql.Stmt
	rev    map[session.SessionID]int64
}

const sqliteRevsSchema = `CREATE TABLE IF NOT EXISTS revs (
	session  TEXT    NOT NULL,
	rev      INTEGER NOT NULL,
	snapshot BLOB    NOT NULL,
	PRIMARY KEY (session, rev)
)`

func newSQLiteRevs(path string) (*sqliteRevs, error) {
	db, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	s := &sqliteRevs{db: db, rev: map[session.SessionID]int64{}}
	if _, err := db.Exec(sqliteRevsSchema); err != nil {
		db.Close()
		return nil, err
	}
	if s.insert, err = db.Prepare("INSERT INTO revs (session, rev, snapshot) VALUES (?, ?, ?)"); err != nil {
		db.Close()
		return nil, err
	}
	if s.last, err = db.Prepare("SELECT rev, snapshot FROM revs WHERE session = ? ORDER BY rev DESC LIMIT 1"); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// append inserts the next revision of snap.ID, one transaction.
func (s *sqliteRevs) append(snap sessnap.Snapshot) error {
	b, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
	if err != nil {
		return err
	}
	if _, err := s.insert.Exec(string(snap.ID), s.rev[snap.ID]+1, b); err != nil {
		return err
	}
	s.rev[snap.ID]++
	return nil
}

// bulk inserts revisions 1..n of snap in one transaction (setup).
func (s *sqliteRevs) bulk(snap sessnap.Snapshot, n int) error {
	b, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
	if err != nil {
		return err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	st := tx.Stmt(s.insert)
	for r := 1; r <= n; r++ {
		if _, err := st.Exec(string(snap.ID), r, b); err != nil {
			tx.Rollback()
			return err
		}
	}
	s.rev[snap.ID] = int64(n)
	return tx.Commit()
}

// load returns the latest revision of id, decoded.
func (s *sqliteRevs) load(id session.SessionID) (int64, sessnap.Snapshot, error) {
	var rev int64
	var b []byte
	if err := s.last.QueryRow(string(id)).Scan(&rev, &b); err != nil {
		return 0, sessnap.Snapshot{}, err
	}
	snap, err := sessnap.Unmarshal(b)
	return rev, snap, err
}

func (s *sqliteRevs) close() error {
	return errors.Join(s.insert.Close(), s.last.Close(), s.db.Close())
}

// sqliteEvents is the best case a SQLite user would build for a growing
// conversation: a row per message, and one row per session for what
// changes in place (state, counters, usage). A revision that adds a
// message inserts that message and updates the session row, in one
// transaction; the conversation is never written again.
type sqliteEvents struct {
	db       *sql.DB
	msgs     int
	rev      int64
	inserted bool
}

const sqliteEventsSchema = `
CREATE TABLE IF NOT EXISTS sessions (
	id         TEXT PRIMARY KEY,
	rev        INTEGER NOT NULL,
	state      TEXT    NOT NULL,
	counters   BLOB    NOT NULL,
	usage      BLOB,
	updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
	session TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	body    BLOB    NOT NULL,
	PRIMARY KEY (session, seq)
)`

func newSQLiteEvents(path string) (*sqliteEvents, error) {
	db, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(sqliteEventsSchema); err != nil {
		db.Close()
		return nil, err
	}
	return &sqliteEvents{db: db}, nil
}

// append writes what changed between the previous snapshot and snap: the
// messages it added, the session row.
func (s *sqliteEvents) append(snap sessnap.Snapshot) error {
	counters, err := json.Marshal(snap.Counters)
	if err != nil {
		return err
	}
	usage, err := json.Marshal(snap.Usage)
	if err != nil {
		return err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i := s.msgs; i < len(snap.Messages); i++ {
		body, err := json.Marshal(snap.Messages[i])
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO messages (session, seq, body) VALUES (?, ?, ?)", string(snap.ID), i, body); err != nil {
			return err
		}
	}
	q := "UPDATE sessions SET rev = ?, state = ?, counters = ?, usage = ?, updated_at = ? WHERE id = ?"
	if !s.inserted {
		q = "INSERT INTO sessions (rev, state, counters, usage, updated_at, id) VALUES (?, ?, ?, ?, ?, ?)"
	}
	if _, err := tx.Exec(q, s.rev+1, string(snap.State), counters, usage, time.Now().UnixNano(), string(snap.ID)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.msgs, s.rev, s.inserted = len(snap.Messages), s.rev+1, true
	return nil
}

func (s *sqliteEvents) close() error { return s.db.Close() }

// bboltSystem is bbolt with a bucket per session, keyed by big-endian
// revision, one Update (one transaction, synced: NoSync false) per
// revision.
type bboltSystem struct {
	db  *bolt.DB
	rev map[session.SessionID]uint64
}

func newBbolt(path string) (*bboltSystem, error) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return nil, err
	}
	if db.NoSync {
		db.Close()
		return nil, errors.New("bbolt: NoSync set")
	}
	return &bboltSystem{db: db, rev: map[session.SessionID]uint64{}}, nil
}

func revKey(rev uint64) []byte { return binary.BigEndian.AppendUint64(nil, rev) }

func (b *bboltSystem) append(snap sessnap.Snapshot) error {
	v, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
	if err != nil {
		return err
	}
	rev := b.rev[snap.ID] + 1
	err = b.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte(snap.ID))
		if err != nil {
			return err
		}
		return bk.Put(revKey(rev), v)
	})
	if err == nil {
		b.rev[snap.ID] = rev
	}
	return err
}

// bulk puts revisions 1..n of snap, 1,000 per transaction (setup).
func (b *bboltSystem) bulk(snap sessnap.Snapshot, n int) error {
	v, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
	if err != nil {
		return err
	}
	for lo := 1; lo <= n; lo += 1000 {
		err := b.db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte(snap.ID))
			if err != nil {
				return err
			}
			for r := lo; r < lo+1000 && r <= n; r++ {
				if err := bk.Put(revKey(uint64(r)), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	b.rev[snap.ID] = uint64(n)
	return nil
}

// load returns the latest revision of id (cursor Last), decoded.
func (b *bboltSystem) load(id session.SessionID) (uint64, sessnap.Snapshot, error) {
	var rev uint64
	var snap sessnap.Snapshot
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(id))
		if bk == nil {
			return fmt.Errorf("bbolt: no bucket %s", id)
		}
		k, v := bk.Cursor().Last()
		if k == nil {
			return fmt.Errorf("bbolt: empty bucket %s", id)
		}
		rev = binary.BigEndian.Uint64(k)
		var err error
		snap, err = sessnap.Unmarshal(v) // decodes into fresh values: v is not kept
		return err
	})
	return rev, snap, err
}

func (b *bboltSystem) close() error { return b.db.Close() }

// openJSONLReader opens a store to read it (no writer).
func openJSONLReader(dir string) (*jsonlstore.Store, error) {
	return jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
}

// mustEncode returns snap's encoding, or nil when it does not encode (the
// systems then fail on it themselves).
func mustEncode(snap sessnap.Snapshot) []byte {
	b, _ := adapter.EncodeSnapshot(snap.ID, snap, 0)
	return b
}
