package pgstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

var _ sessionstore.Store = (*Store)(nil)

// WatchApplicationName is the application_name of Watch's dedicated
// connections (unless the DSN sets one), so that they can be told apart
// in pg_stat_activity.
const WatchApplicationName = "pgstore-watch"

// Defaults of Options.
const (
	DefaultLeaseTTL    = 30 * time.Second
	DefaultAcquirePoll = 250 * time.Millisecond
)

// Options tune a Store. The zero value works.
type Options struct {
	// MaxRecordBytes caps one encoded snapshot (its large content kept
	// out of line) this store writes; 0 means
	// sessionstore.DefaultMaxRecordBytes. A session records the largest cap
	// of its writers, and a holder writes under the larger of its own and
	// that one; reads take any record up to sessionstore.MaxReadRecordBytes.
	MaxRecordBytes int
	// BlobThreshold is the size from which part content (a text, a tool
	// output, an image's data) is kept out of line, once per session in
	// pgstore_blobs (0: sessionstore.DefaultBlobThreshold; negative:
	// never).
	BlobThreshold int
	// LeaseTTL is how long a lease lives without a heartbeat (or an
	// append, which also proves the holder alive); 0 means
	// DefaultLeaseTTL. A holder paused for longer loses its lease.
	LeaseTTL time.Duration
	// HeartbeatInterval is how often a writer heartbeats by itself when
	// its AcquireOptions name no interval; 0 means LeaseTTL/3.
	HeartbeatInterval time.Duration
	// AcquirePoll bounds how long a waiting Acquire sleeps between looks at
	// a lease held by another process (a release in this process wakes it
	// at once); 0 means DefaultAcquirePoll.
	AcquirePoll time.Duration
	// Now is the clock for record times; nil means time.Now. Lease expiry
	// uses the database server's clock, the one clock every machine
	// shares.
	Now func() time.Time
	// Redactor replaces the secrets of what the store writes, before it
	// reaches a row: records, blobs, summaries, the search index (nil:
	// redact.Default(), the high-confidence rules); a writer's
	// AcquireOptions may name another.
	Redactor *redact.Redactor
}

func (o Options) withDefaults() Options {
	adapter.Defaults(&o.MaxRecordBytes, &o.BlobThreshold, &o.Now, &o.Redactor)
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = o.LeaseTTL / 3
	}
	if o.AcquirePoll <= 0 {
		o.AcquirePoll = DefaultAcquirePoll
	}
	return o
}

// Store is the PostgreSQL adapter of sessionstore.Store. It is safe for
// concurrent use by many goroutines, and by many processes on many
// machines sharing one database.
type Store struct {
	opts Options
	pool *pgxpool.Pool
	// listenCfg configures the dedicated connections of Watch: LISTEN
	// needs a connection of its own, outside the pool.
	listenCfg *pgx.ConnConfig
	host      string
	pid       int

	// life is cancelled by Close: it ends heartbeats and watches.
	life   context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup // heartbeat and watch goroutines

	mu     sync.Mutex
	closed bool
	// freed is closed (and replaced) whenever a writer of this store
	// releases or deletes, and by Close, to wake waiting Acquires at once.
	freed chan struct{}
}

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string, as libpq takes) and checks its schema: a database not
// migrated to SchemaVersion is refused with ErrSchemaOutdated (run
// Migrate), one migrated by a newer program with ErrSchemaNewer.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse DSN: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, opErr("connect", "", err)
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	host, _ := os.Hostname() // "" if unknown: identity is for people only
	life, cancel := context.WithCancel(context.Background())
	listenCfg := cfg.ConnConfig.Copy()
	if listenCfg.RuntimeParams["application_name"] == "" {
		// Names the watch connections in pg_stat_activity.
		listenCfg.RuntimeParams["application_name"] = WatchApplicationName
	}
	return &Store{
		opts:      opts.withDefaults(),
		pool:      pool,
		listenCfg: listenCfg,
		host:      host,
		pid:       os.Getpid(),
		life:      life,
		cancel:    cancel,
		freed:     make(chan struct{}),
	}, nil
}

func (s *Store) now() time.Time { return s.opts.Now().UTC() }

// ready reports ErrClosed or ctx's error (adapter.Ready).
func (s *Store) ready(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return adapter.Ready(ctx, s.closed)
}

// readyID validates id, then reports ErrClosed or ctx's error.
func (s *Store) readyID(ctx context.Context, id session.SessionID) error {
	if err := sessionstore.ValidateID(id); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return opErr("session", id, err)
	}
	return nil
}

// wakeWaiters wakes every Acquire of this store waiting for a lease.
func (s *Store) wakeWaiters() {
	s.mu.Lock()
	close(s.freed)
	s.freed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Store) freedChan() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.freed
}

// Close ends every watch and heartbeat, wakes every waiting Acquire and
// closes the connections; afterwards every method of the store and of its
// writers returns ErrClosed. Leases still held by its writers are not
// released: they expire after LeaseTTL, and the next holder sees them
// stale. Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.freed)
	s.mu.Unlock()
	s.cancel()
	s.bg.Wait()
	s.pool.Close()
	return nil
}

// Create implements sessionstore.Store.
func (s *Store) Create(ctx context.Context, snap sessnap.Snapshot, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	if err := s.readyID(ctx, snap.ID); err != nil {
		return nil, err
	}
	return s.create(ctx, &snap, opts, "")
}

// Fork implements sessionstore.Store. The fork's revision 1 is the
// source revision as stored, its references included: the content they
// name is copied into the fork's rows by the server, in the transaction
// that creates the fork.
func (s *Store) Fork(ctx context.Context, from session.SessionID, rev uint64, newID session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	newID, err := adapter.ForkID(ctx, from, newID, s.readyID)
	if err != nil {
		return nil, err
	}
	src, err := s.LoadWith(ctx, from, sessionstore.LoadOptions{Revision: rev, WithoutContent: true})
	if err != nil {
		return nil, err
	}
	snap := adapter.ForkSnapshot(src.Snapshot, newID)
	return s.create(ctx, &snap, opts, from)
}

// create stores revision 1 of a new session, its content kept out of line
// (for a fork, the content of session from its references name), its
// summary and its lease, held by the returned writer, in one transaction.
// A fork is written under the larger of the store's cap and from's.
func (s *Store) create(ctx context.Context, snap *sessnap.Snapshot, opts sessionstore.AcquireOptions, from session.SessionID) (sessionstore.Writer, error) {
	id := snap.ID
	w := s.newWriter(id, 1)
	w.app = s.newAppender(s.opts.MaxRecordBytes)
	w.app.Redact = redact.NewStream(cmp.Or(opts.Redactor, s.opts.Redactor))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if from != "" {
			var recorded int64
			err := tx.QueryRow(ctx, `SELECT max_record_bytes FROM pgstore_sessions WHERE id = $1`, string(from)).Scan(&recorded)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			w.app.Max = s.writeCap(recorded)
		}
		err := s.insertSessionTx(ctx, tx, w, opts.Label)
		if err != nil {
			return err
		}
		held := map[string]int64{}
		if from != "" {
			if held, err = copyBlobs(ctx, tx, from, id, snap.Messages); err != nil {
				return err
			}
		}
		if err := w.arrivals.Check(id, snap.Messages, blob.Held(held).Size); err != nil {
			return err
		}
		put, added := blobPut(ctx, tx, id, held)
		m, line, err := s.encode(w.app, id, record.First(1, s.opts.Now()), snap, put)
		if err != nil {
			return err
		}
		if _, err := s.appendTx(ctx, tx, id, snap, m, line, latest{}); err != nil {
			return err
		}
		s.indexTx(ctx, tx, &w.search, id, 1, snap)
		maps.Copy(held, added)
		w.known, w.sound = held, maps.Clone(held)
		// The lease's time to live counts from here, not from the insert:
		// a transaction that outlasts it (a large snapshot on a busy
		// server) would hand back a lease already expired.
		_, err = tx.Exec(ctx, extendSQL, string(id), s.opts.LeaseTTL.Microseconds())
		return err
	})
	if err != nil {
		return nil, wrapErr("create", id, err)
	}
	w.rev.Store(1)
	s.startWriter(w, opts)
	return w, nil
}

// insertSessionTx inserts w's session, its lease held by w (generation 1)
// and its record cap w's, in tx: ErrExists when the session exists.
func (s *Store) insertSessionTx(ctx context.Context, tx pgx.Tx, w *writer, label string) error {
	tag, err := tx.Exec(ctx, `INSERT INTO pgstore_sessions
		(id, generation, lease_state, expires_at, nonce, host, pid, label, acquired_at, heartbeat_at, max_record_bytes)
		VALUES ($1, 1, 'held', clock_timestamp() + $2 * interval '1 microsecond', $3, $4, $5, $6, clock_timestamp(), clock_timestamp(), $7)
		ON CONFLICT (id) DO NOTHING`,
		string(w.id), s.opts.LeaseTTL.Microseconds(), w.nonce, s.host, s.pid, label, w.app.Max)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: session %s", sessionstore.ErrExists, w.id)
	}
	return nil
}

// readCap is the record cap every read of the records table reads with:
// the database frames each record, so a record any writer stored is read,
// however small the reader's own cap, up to the ceiling every reader
// keeps.
const readCap = sessionstore.MaxReadRecordBytes

// newAppender returns the append state of a writer that knows no stored
// revision, writing under record cap max: its next record is full. It
// redacts with the store's Redactor.
func (s *Store) newAppender(max int) *appender.Appender {
	a := appender.New(nil, max, false)
	a.Redact = redact.NewStream(s.opts.Redactor)
	return a
}

// writeCap is the record cap a holder writes under in a session whose
// recorded cap is recorded (0: none): record.SessionCap.
func (s *Store) writeCap(recorded int64) int {
	return record.SessionCap(s.opts.MaxRecordBytes, recorded)
}

// encode builds the line of record m for *snap with app (a delta on the
// revision app remembers, or a full record, its older messages in pages;
// its secrets replaced in *snap first, appender.Appender.Line),
// its new content and pages kept out of line through put, and returns the
// record's envelope as the line has it (Kind and Version set) and the
// line.
func (s *Store) encode(app *appender.Appender, id session.SessionID, m record.Meta, snap *sessnap.Snapshot, put func(hash string, content []byte) error) (record.Meta, []byte, error) {
	ext := &blob.Externalizer{Threshold: s.opts.BlobThreshold, Put: put}
	app.Ext, app.Pages = ext, ext // a full record's pages are kept as content is
	line, err := app.Line(id, m, snap)
	app.Ext, app.Pages = nil, nil // they hold the transaction
	if err != nil {
		return m, nil, err
	}
	meta, _, err := record.Parse(line[:len(line)-1], app.Max)
	if err != nil {
		return m, nil, fmt.Errorf("the record of revision %d does not read back: %w", m.Rev, err)
	}
	return meta, line, nil
}

// newNonce returns a random identity for one acquisition: a writer fences
// on its generation and its nonce, so that a session deleted and created
// again (its generations restart) never admits an old writer.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
