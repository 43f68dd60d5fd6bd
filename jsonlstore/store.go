package jsonlstore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/create"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/listing"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/watch"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

var _ sessionstore.Store = (*Store)(nil)

// Options tune a Store. The zero value works.
type Options struct {
	// MaxRecordBytes is the record cap this store writes with (0:
	// sessionstore.DefaultMaxRecordBytes, which says what the cap bounds):
	// a snapshot that does not fit is refused and nothing is written. A
	// cap above the default is recorded in the session (SettingsFile), so
	// that every reader reads what was written: a reader reads with the
	// largest of its own cap, the default and the recorded one (at most
	// MaxReadRecordBytes), and holds no more than that (plus the envelope)
	// of one line in memory.
	MaxRecordBytes int
	// PollInterval is how often the watcher rescans when it cannot rely on
	// file system events, and probes the leases it saw held, to see a
	// holder that died (0: 1s).
	PollInterval time.Duration
	// LeftoverAge is how old an unheld temporary or trash directory must be
	// before it is swept (0: 1 minute).
	LeftoverAge time.Duration
	// Logger receives notable events (recoveries, sweeps); nil means none.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// BlobThreshold is the size from which part content (a text, a tool
	// output, an image's data) is kept out of line, stored once per session
	// under its SHA-256 in the session's blobs/ directory (0:
	// sessionstore.DefaultBlobThreshold; negative: never).
	BlobThreshold int
	// FullRecordsOnly makes writers write every revision as a full
	// record. By default a revision that changes part of the snapshot is
	// written as a delta against the previous one when that is smaller
	// (FORMAT.md), which keeps a growing session's log near the size of
	// its last snapshot instead of the sum of all of them. A log written
	// with FullRecordsOnly is a format 1 log, readable by programs that
	// predate deltas.
	FullRecordsOnly bool
	// Search is the full-text search index the store is opened with:
	// fts.New(), from package
	// github.com/sessionstore/sessionstore/jsonlstore/fts, which links
	// SQLite. Without it (nil), Search, ReindexSearch, VerifySearch and
	// FlushSearch return ErrNoSearch, and nothing of search is linked;
	// appends still leave the index correct for a store opened with it
	// (a search reads again every session whose log changed since the
	// index read it, whoever wrote it). The CLI always opens stores with
	// it.
	Search SearchIndex
	// Redactor replaces the secrets of what the store writes, before any
	// byte of it reaches a file: the log, blobs, the summary, the catalog,
	// the search index (nil: redact.Default(), the high-confidence rules);
	// a writer's AcquireOptions may name another.
	Redactor *redact.Redactor
}

func (o Options) withDefaults() Options {
	adapter.Defaults(&o.MaxRecordBytes, &o.BlobThreshold, &o.Now, &o.Redactor)
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.LeftoverAge <= 0 {
		o.LeftoverAge = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Store is the file store: a directory per session under a root directory.
// It is safe for concurrent use by many goroutines and many processes.
type Store struct {
	dir    string // absolute root path
	osRoot *os.Root
	fs     vfs.FS
	root   *layout.Root // the root as the rooms see it (fs, dir and opts)
	leases leaser
	opts   Options

	closed atomic.Bool
	mu     sync.Mutex
	watch  *watch.Watcher // started by the first Watch
	// cat is the store's catalog (package catalogfile), lister its
	// listings (package listing).
	cat    *catalogfile.Catalog
	lister *listing.Lister
	// search is the search index the store was opened with
	// (Options.Search, searchindex.go); nil: none.
	search searchhost.Index
}

// Open opens (creating it, 0700, if needed) the store rooted at dir. It
// refuses (ErrUnsafeRoot) a root that other users may write or that
// belongs to another user.
func Open(dir string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := opts.searchComponent(); err != nil {
		return nil, err
	}
	root, err := layout.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return newStore(abs, root, vfs.OS(root), fsLeaser{}, opts), nil
}

func newStore(abs string, root *os.Root, fsys vfs.FS, leases leaser, opts Options) *Store {
	opts = opts.withDefaults()
	s := &Store{dir: abs, osRoot: root, fs: fsys, leases: leases, opts: opts, root: &layout.Root{
		FS: fsys, Dir: abs, MaxRecordBytes: opts.MaxRecordBytes, BlobThreshold: opts.BlobThreshold,
		FullRecordsOnly: opts.FullRecordsOnly, LeftoverAge: opts.LeftoverAge, Logger: opts.Logger, Now: opts.Now,
	}}
	s.cat = catalogfile.New(s.root, storeHost{s})
	s.lister = listing.New(s.root, s.cat, storeHost{s})
	if c, _ := s.opts.searchComponent(); c != nil { // checked by Open
		s.search = c.Open(searchHost{s})
	}
	return s
}

// Dir returns the store's root directory.
func (s *Store) Dir() string { return s.dir }

// Close stops the watcher and releases the root. Writers should be
// released first.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w != nil {
		w.Close()
	}
	s.cat.Close() // forget the cached catalog
	if s.search != nil {
		s.search.Close()
	}
	if s.osRoot != nil {
		return s.osRoot.Close()
	}
	return nil
}

func (s *Store) check(ctx context.Context, id session.SessionID) error {
	if s.closed.Load() {
		return sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sessionstore.ValidateID(id); err != nil {
		return err
	}
	return nil
}

// read runs fn on fresh views of session id's log (logfile.Read), once
// the store is open, ctx is not done and id is valid.
func (s *Store) read(ctx context.Context, id session.SessionID, fn func(v *logfile.View) error) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return logfile.Read(ctx, s.root, id, fn)
}

// checkSession is check, then exists: the store is open, ctx is not done,
// id is valid and its session is there.
func (s *Store) checkSession(ctx context.Context, id session.SessionID) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return s.root.Exists(id)
}

// --- creation ---------------------------------------------------------------

// Create creates session snap.ID with snap as revision 1, atomically: the
// session directory is built under a temporary name (its lease taken, its
// log written and synced) and then renamed into place with
// RENAME_NOREPLACE, so a session either exists whole or not at all.
func (s *Store) Create(ctx context.Context, snap sessnap.Snapshot, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.CreateHistory(ctx, func(yield func(sessnap.Snapshot, error) bool) { yield(snap, nil) }, opts)
}

// newWriter returns the writer of session id for the holder of lease,
// appending to log (an O_APPEND descriptor) after last, the log's last
// record, with the append state app and blobs. The log must end where
// last does. marked says whether the lease's catalog mark is made
// (takeLease). The caller closes log when newWriter fails.
func (s *Store) newWriter(id session.SessionID, lease leaseHandle, log vfs.File, last *record.Rec, app *appender.Appender, blobs *blobfile.Writer, report sessionstore.RecoveryReport, marked bool) (*writer, error) {
	fi, err := log.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != last.End() {
		return nil, fmt.Errorf("log is %d bytes, its last record ends at %d", fi.Size(), last.End())
	}
	dir, err := vfs.Sub(s.fs, layout.SessionDir(id))
	if err != nil {
		return nil, err
	}
	return &writer{
		s: s, id: id, lease: lease, log: log, logID: vfs.IdentityOf(fi), dir: dir, app: app, blobs: blobs,
		rev: last.Through(), last: last.Meta, size: fi.Size(), lastOffset: last.Offset,
		report: report, mark: s.cat.MarkFor(id, lease.Generation(), marked), feed: s.searchFeed(id, false),
	}, nil
}

// newAppender returns the append state of a writer of a new session, or
// of one whose latest revision it does not know, writing blobs into the
// session directory dir (none with FullRecordsOnly).
func (s *Store) newAppender(dir string) (*appender.Appender, *blobfile.Writer) {
	if s.opts.FullRecordsOnly {
		a := appender.New(nil, s.opts.MaxRecordBytes, true)
		a.Redact = redact.NewStream(s.opts.Redactor)
		return a, nil
	}
	blobs := blobfile.NewWriter(s.fs, dir, s.opts.BlobThreshold)
	a := appender.New(blobs, s.opts.MaxRecordBytes, false)
	a.Pages = blobs
	a.Redact = redact.NewStream(s.opts.Redactor)
	return a, blobs
}

// startSession starts building new session id (package create) under
// record cap maxRecord, its lease taken as opts say.
func (s *Store) startSession(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, maxRecord int) (*create.Session, error) {
	return create.Start(ctx, s.root, id, s.takeNew, s.leaseOptions(opts, 0), maxRecord)
}

// takeNew takes the lease of new session id in its temporary directory
// dir, without waiting (create.TakeLease).
func (s *Store) takeNew(ctx context.Context, id session.SessionID, dir string, opts fslease.Options) (leaseHandle, bool, error) {
	return s.takeLease(ctx, id, dir, true, opts)
}

// Fork creates newID whose revision 1 copies revision rev of from, under
// the larger of the store's record cap and from's (settings.json). Its
// blobs and pages are hard links of from's (clones, else copies, where
// the file system links none): a fork costs its log, not its content.
func (s *Store) Fork(ctx context.Context, from session.SessionID, rev uint64, newID session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	newID, err := adapter.ForkID(ctx, from, newID, s.check)
	if err != nil {
		return nil, err
	}
	// The fork's parts keep their references to content out of line, and
	// its blobs and pages are the parent's files (blobfile.ShareFrom):
	// nothing of them is read or written again. A fork redacted as it is
	// written reads its content, which the redactor must see.
	share := from
	if opts.Redactor != nil || s.opts.FullRecordsOnly {
		share = ""
	}
	src, err := s.LoadWith(ctx, from, sessionstore.LoadOptions{Revision: rev, WithoutContent: share != ""})
	if err != nil {
		return nil, err
	}
	// The fork is written under its source's cap when that is larger, so
	// that a revision the source holds forks whatever this store's cap.
	snap := adapter.ForkSnapshot(src.Snapshot, newID)
	w, err := s.createHistoryFrom(ctx, func(yield func(sessnap.Snapshot, error) bool) { yield(snap, nil) }, opts, false, layout.ReadCap(s.fs, from, s.opts.MaxRecordBytes), share)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (s *Store) leaseOptions(opts sessionstore.AcquireOptions, minGen uint64) fslease.Options {
	return fslease.Options{
		Label:             opts.Label,
		MinGeneration:     minGen,
		HeartbeatInterval: opts.HeartbeatInterval,
		Now:               s.opts.Now,
	}
}
