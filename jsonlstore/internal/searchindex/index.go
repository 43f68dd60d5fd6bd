package searchindex

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
)

// Index is a store's search index and the queue of what its writers
// appended (searchhost.Index).
type Index struct {
	h   searchhost.Host
	fs  vfs.FS
	log *slog.Logger
	// The index's paths in the root: its directory, its file, the lock
	// that keeps a file from being replaced while it is opened, and the
	// one that makes one process at a time its writer (searchfile.go).
	dir, file, lock, writer string
	// closing: the store is closing; the queue is written one last
	// time, and nothing is read from the logs any more.
	closing atomic.Bool

	mu     sync.Mutex // guards db, dbID and closed; held across a use of db
	db     *searchdb.DB
	dbID   vfs.Identity
	closed bool // by Close: nothing opens the index any more

	feedMu sync.Mutex // guards feed
	feed   searchFeed

	stats struct {
		probes, vouched, reproved      atomic.Int64
		appended, wholeReads, inMemory atomic.Int64
		leftToHolder, feedWrites       atomic.Int64
	}

	// holderWindow is searchHolderWindow; tests whose writers do not
	// index set it to 0, so that every search writes what it reads.
	holderWindow time.Duration
}

var _ searchhost.Index = (*Index)(nil)

// open is the Index of the store that h is.
func open(h searchhost.Host) *Index {
	dir := h.Dir()
	return &Index{h: h, fs: h.FS(), log: h.Logger(), dir: dir, file: dir + "/index.db", lock: dir + "/lock", writer: dir + "/writer", holderWindow: searchHolderWindow}
}

// SetHolderWindow sets how far a row may lag its held session's log and
// be left to the holder (searchHolderWindow; 0: never). For tests whose
// writers do not index.
func (x *Index) SetHolderWindow(d time.Duration) { x.holderWindow = d }

// Stats implements searchhost.Index.
func (x *Index) Stats() searchhost.Stats {
	return searchhost.Stats{
		Probes: x.stats.probes.Load(), Vouched: x.stats.vouched.Load(), Reproved: x.stats.reproved.Load(),
		Appended: x.stats.appended.Load(), WholeReads: x.stats.wholeReads.Load(), InMemory: x.stats.inMemory.Load(),
		LeftToHolder: x.stats.leftToHolder.Load(), FeedWrites: x.stats.feedWrites.Load(),
	}
}

// Files and directories the index makes are the store's owner's alone,
// as the store's own (jsonlstore's dirPerm and filePerm).
const (
	dirPerm  = 0o700
	filePerm = 0o600
	// tmpSuffix ends the name of a new index being made.
	tmpSuffix = ".tmp"
)

// endsStoreWide reports whether err ends the whole search rather than
// one session's part in it: the store closed, the caller's context done.
func endsStoreWide(err error) bool {
	return errors.Is(err, sessionstore.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Component is the search index a store is opened with
// (searchhost.Component; jsonlstore/fts.New returns it). Each store
// opened with it has an Index of its own.
type Component struct {
	// For tests: wrap, if set, stands between the store and each Index
	// the component opens; opened, if set, is told each Index.
	wrap   func(searchhost.Host) searchhost.Host
	opened func(*Index)
}

// New returns the component.
func New() Component { return Component{} }

// Open implements searchhost.Component.
func (c Component) Open(h searchhost.Host) searchhost.Index {
	if c.wrap != nil {
		h = c.wrap(h)
	}
	x := open(h)
	if c.opened != nil {
		c.opened(x)
	}
	return x
}

// SearchIndexName implements jsonlstore.SearchIndex.
func (Component) SearchIndexName() string { return "fts (SQLite FTS5, ROOT/.search/index.db)" }

var _ searchhost.Component = Component{}
