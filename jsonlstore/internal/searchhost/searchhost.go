package searchhost

import (
	"context"
	"io/fs"
	"log/slog"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Component is a search index a store can be opened with. The store
// calls Open once, when it is opened, and keeps the Index until Close.
type Component interface {
	Open(h Host) Index
}

// Host is what a store gives its search index. Its methods are safe for
// concurrent use. Names are relative to the store's root, as vfs.FS
// takes them.
type Host interface {
	// FS is the store's root.
	FS() vfs.FS
	// Abs is the absolute path of name in the root (SQLite opens files
	// by path).
	Abs(name string) string
	// Dir is the directory in the root that the index may keep its
	// files in (".search"). Nothing else in the store writes there;
	// backups leave it out.
	Dir() string
	// Logger hears what the index has to say (never nil).
	Logger() *slog.Logger

	// Sessions lists the names in the root that may be sessions, with
	// the state of each one's log where the catalog vouches for it
	// (Log.Vouched: an unmarked session whose entry can be believed has
	// not changed since the entry was made); the others' logs are the
	// caller's to probe (ProbeLog). With probeAll, or where the catalog
	// cannot be believed, it vouches for none. The caller calls Keep
	// once it is done (a search keeps the catalog as a listing does).
	Sessions(ctx context.Context, probeAll bool) (Sessions, error)
	// ProbeLog is the state of session id's log: one lstat of it (which
	// may follow a symlinked session directory: IsSession says whether
	// it is one).
	ProbeLog(id session.SessionID) (fs.FileInfo, error)
	// IsSession reports whether id is a session directory in the root
	// (a directory, not a symlink to one), as listings count sessions.
	IsSession(id session.SessionID) bool
	// ChangedWithoutMark reports whether a session of ids, unmarked
	// when the catalog vouched for it, has no mark now: its log changed
	// behind the catalog's back (a program without the catalog, a hand
	// edit), or it is gone. It logs the first such session.
	ChangedWithoutMark(ids []session.SessionID) bool
	// Held reports whether a live process holds session id's lease
	// (false when that cannot be told).
	Held(ctx context.Context, id session.SessionID) bool

	// ReadLog calls fn with a read of session id's log: one open file,
	// read again on a fresh view when it changes under the read (fn is
	// then called again), so that what fn reads is one state of the
	// log. Errors: sessionstore.ErrNotFound for a session that is gone,
	// the log's corruption, fn's.
	ReadLog(ctx context.Context, id session.SessionID, fn func(Log) error) error
}

// Sessions is what Host.Sessions found.
type Sessions struct {
	IDs []session.SessionID
	// Logs[i] is the state of IDs[i]'s log where the catalog vouches
	// for it.
	Logs []LogState
	// Keep does what the catalog needs after the search (rebuild: a log
	// was found changed behind its back). Call it once.
	Keep func(ctx context.Context, rebuild bool)
}

// LogState is the state of a log as the catalog vouches for it.
type LogState struct {
	Proof   Proof
	Vouched bool
}

// Proof is the state of a log file: its identity, size and modification
// time (nanoseconds).
type Proof struct {
	Dev, Ino    uint64
	Size, Mtime int64
}

// Log is one read of a session's log (Host.ReadLog), valid during the
// call.
type Log interface {
	// Stat is the log file's state.
	Stat() (fs.FileInfo, error)
	// Size is how much of the log the read covers.
	Size() int64
	// Latest is the log's last record (read from its end).
	Latest() (*record.Rec, error)
	// Before is the record before r (nil at the start of the log).
	Before(r *record.Rec) (*record.Rec, error)
	// LoadLatest is the last record and its revision with the content.
	LoadLatest() (*record.Rec, sessionstore.Record, error)
	// History reads the whole history, archives then log, forward.
	// Close it.
	History() History
	// Resolve reads the content msgs refer to (blobs) into them.
	Resolve(msgs sessnap.Messages) error
}

// History is a forward read of a session's records.
type History interface {
	Next() bool
	Record() *record.Rec
	Err() error
	Close()
}

// Index is a store's search index, from Component.Open. Its methods are
// safe for concurrent use; Search, Reindex, Verify and Flush are the
// store's methods of the same names (their docs say what they do).
type Index interface {
	Search(ctx context.Context, q sessionstore.SearchQuery) (sessionstore.SearchResult, error)
	Reindex(ctx context.Context) (sessionstore.SearchIndexReport, error)
	Verify(ctx context.Context) (VerifyReport, error)
	Flush(ctx context.Context) error
	// Feed is the feed of a writer of session id; created says the
	// writer created the session with one revision (the index holds
	// nothing of it).
	Feed(id session.SessionID, created bool) Feed
	// Deleted queues the removal of session id.
	Deleted(id session.SessionID)
	// Close writes what is queued (waiting a little for another
	// process) and closes the index; the store's Close calls it.
	Close()
	// Stats counts what the index did, for tests and diagnostics.
	Stats() Stats
}

// Feed is what a writer tells the index. Appended is called with the
// writer's lock held, after a revision is durable; it must cost no I/O.
type Feed interface {
	// Appended: revision rec, whose snapshot is snap, is durable; fi is
	// the log's state ending with it (nil when unknown).
	Appended(rec *record.Rec, snap *sessnap.Snapshot, fi fs.FileInfo)
}

// VerifyReport is what Index.Verify found (the store's
// SearchVerifyReport, field for field).
type VerifyReport struct {
	State    string   `json:"state"`
	Sessions int      `json:"sessions"`
	Problems []string `json:"problems,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// Stats counts how searches proved the index's rows current (logs
// probed, rows the catalog vouched for, catch-ups that probed every log
// after a hit's log proved the catalog wrong) and how the index was
// brought up to date (sessions read from what was appended alone, read
// whole, searched in memory because the index would not take them, left
// to their holders to write), and how often the queue was written (or
// tried).
type Stats struct {
	Probes, Vouched, Reproved      int64
	Appended, WholeReads, InMemory int64
	LeftToHolder, FeedWrites       int64
}
