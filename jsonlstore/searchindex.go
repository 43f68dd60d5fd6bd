package jsonlstore

import (
	"context"
	"io/fs"
	"log/slog"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The full-text search index (FORMAT.md "The search index") is a
// component a store is opened with (Options.Search), not part of the
// store: it keeps a SQLite database, and a program that never searches
// should not link SQLite. This file is the store's side of the seam
// (package searchhost): the methods that hand a search to the index, and
// the host the index reaches the store's files through — the root, the
// sessions' logs read as records, the catalog's word on them. The index
// itself (jsonlstore/internal/searchindex) never imports the store.
//
// A store opened without an index still leaves the index correct for a
// store opened with one: the index holds, per session, the state of the
// log it was read from, and a search reads again every session whose log
// is not in that state, whoever appended to it.

// SearchDir is the directory in the root that the search index keeps its
// files in. Its name starts with a dot, so it is never a session; backups
// leave it out.
const SearchDir = ".search"

// SearchIndex is a full-text search index a store is opened with
// (Options.Search). The one there is comes from package
// github.com/sessionstore/sessionstore/jsonlstore/fts (fts.New()): an
// SQLite FTS5 index in ROOT/.search/. The store reaches it through
// methods of an internal interface, so Open refuses any other
// implementation (ErrNoSearch).
type SearchIndex interface {
	// SearchIndexName names the index, for messages.
	SearchIndexName() string
}

// searchComponent is opts.Search as the store uses it; nil without one.
func (o Options) searchComponent() (searchhost.Component, error) {
	if o.Search == nil {
		return nil, nil
	}
	c, ok := o.Search.(searchhost.Component)
	if !ok {
		return nil, layout.OpErr("open", "", fmtNoSearch(o.Search))
	}
	return c, nil
}

// SearchIndexState is what VerifySearch found the search index to be.
type SearchIndexState string

// The states of the search index. SearchIndexDamaged and
// SearchIndexUnreadable are problems; searches answer correctly in every
// state (they rebuild a damaged index, and read the logs where there is
// no usable one).
const (
	// SearchIndexSound: the file passes SQLite's check and its schema is
	// the index's.
	SearchIndexSound SearchIndexState = "sound"
	// SearchIndexMissing: there is none; the next search builds it.
	SearchIndexMissing SearchIndexState = "missing"
	// SearchIndexDamaged: the file fails SQLite's check, holds objects
	// that are not the index's (a trigger, a view), is of another
	// version's schema, or is not a regular file of its own. The next search or
	// `sessions reindex` replaces it with a new file.
	SearchIndexDamaged SearchIndexState = "damaged"
	// SearchIndexOtherVersion: another version of the program made it;
	// the next search replaces it with one of this version's.
	SearchIndexOtherVersion SearchIndexState = "other version"
	// SearchIndexUnreadable: this user may not read or write it (another
	// user's). Searches read the logs instead; nothing replaces it.
	SearchIndexUnreadable SearchIndexState = "unreadable"
)

// SearchVerifyReport is what VerifySearch found.
type SearchVerifyReport struct {
	State SearchIndexState `json:"state"`
	// Sessions is the number of sessions the index has rows of (sound
	// only).
	Sessions int `json:"sessions"`
	// Problems say what is wrong (damaged or unreadable).
	Problems []string `json:"problems,omitempty"`
	// Notes are no failure.
	Notes []string `json:"notes,omitempty"`
}

// OK reports whether the index has no problem.
func (r *SearchVerifyReport) OK() bool { return len(r.Problems) == 0 }

// Search implements sessionstore.Store: the store's search index brings
// itself up to date with every session on disk, whoever wrote it, then
// answers. Without a search index (Options.Search) it is ErrNoSearch.
func (s *Store) Search(ctx context.Context, q sessionstore.SearchQuery) (sessionstore.SearchResult, error) {
	if err := s.searchUsable(); err != nil {
		return sessionstore.SearchResult{}, err
	}
	return s.search.Search(ctx, q)
}

// ReindexSearch rebuilds the search index from the logs, as a new file:
// every session is indexed into a new index beside the old one, which
// then replaces it (so nothing of the old file survives: rows, triggers,
// damage). Searches meanwhile stay correct (they use the old index, and
// index what they find missing). Whatever is at the index's paths that
// the store never puts there (a directory, a symlink, a FIFO) is
// replaced; an index this user may not read or write is a permission
// error, and is left alone. It reports what it indexed. Without a search
// index (Options.Search) it is ErrNoSearch.
func (s *Store) ReindexSearch(ctx context.Context) (sessionstore.SearchIndexReport, error) {
	if err := s.searchUsable(); err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	return s.search.Reindex(ctx)
}

// VerifySearch checks the search index (ROOT/.search/): that what is at
// its paths is what the store keeps there, that its file passes
// SQLite's quick_check (the structure of every page, and FTS5's check
// of its data), and that its schema is exactly the index's. It modifies
// nothing and is safe while agents write and search; a damaged index is
// left for the next search or `sessions reindex` to replace. It costs a
// read of the whole file. Errors: ctx's, a closed store, I/O that keeps
// it from looking, ErrNoSearch without a search index (Options.Search).
func (s *Store) VerifySearch(ctx context.Context) (SearchVerifyReport, error) {
	if err := s.searchUsable(); err != nil {
		return SearchVerifyReport{}, err
	}
	r, err := s.search.Verify(ctx)
	return SearchVerifyReport{State: SearchIndexState(r.State), Sessions: r.Sessions, Problems: r.Problems, Notes: r.Notes}, err
}

// FlushSearch writes the search index updates that appends queued, now,
// waiting up to a few seconds for another process's write to the index;
// it returns what kept it from writing them (they are then left to the
// next search). Appends need not call it: the store writes its queue
// soon after each append, and when it is closed. Without a search index
// (Options.Search) it is ErrNoSearch.
func (s *Store) FlushSearch(ctx context.Context) error {
	if err := s.searchUsable(); err != nil {
		return err
	}
	return s.search.Flush(ctx)
}

// searchUsable is ErrClosed for a closed store, ErrNoSearch for one
// opened without a search index.
func (s *Store) searchUsable() error {
	switch {
	case s.closed.Load():
		return sessionstore.ErrClosed
	case s.search == nil:
		return ErrNoSearch
	}
	return nil
}

// searchFeed is the feed of a writer of session id (created: it created
// the session with one revision), nil without a search index.
func (s *Store) searchFeed(id session.SessionID, created bool) searchhost.Feed {
	if s.search == nil {
		return nil
	}
	return s.search.Feed(id, created)
}

// indexAppended tells the search index, if any, that revision rec of
// w's session, whose snapshot is snap, is durable; fi is the log's state
// ending with it (logStatAt), nil when unknown.
func (w *writer) indexAppended(rec *record.Rec, snap *sessnap.Snapshot, fi fs.FileInfo) {
	if w.feed != nil {
		w.feed.Appended(rec, snap, fi)
	}
}

// indexDeleted tells the search index, if any, that session id is gone.
func (s *Store) indexDeleted(id session.SessionID) {
	if s.search != nil {
		s.search.Deleted(id)
	}
}

// searchHost is the store as its search index sees it
// (searchhost.Host).
type searchHost struct{ s *Store }

var _ searchhost.Host = searchHost{}

func (h searchHost) FS() vfs.FS             { return h.s.fs }
func (h searchHost) Abs(name string) string { return h.s.root.Abs(name) }
func (h searchHost) Dir() string            { return SearchDir }
func (h searchHost) Logger() *slog.Logger   { return h.s.opts.Logger }
func (h searchHost) IsSession(id session.SessionID) bool {
	fi, err := h.s.fs.Lstat(layout.SessionDir(id))
	return err == nil && fi.IsDir()
}

func (h searchHost) ProbeLog(id session.SessionID) (fs.FileInfo, error) {
	return vfs.Probe(h.s.fs, layout.LogPath(id))
}

// Sessions implements searchhost.Host with the catalog's word on the
// logs (catalogfile's trust rules).
func (h searchHost) Sessions(_ context.Context, probeAll bool) (searchhost.Sessions, error) {
	return h.s.cat.SearchSessions(probeAll)
}

// Held implements searchhost.Host.
func (h searchHost) Held(ctx context.Context, id session.SessionID) bool {
	st, err := h.s.leases.Inspect(ctx, h.s.root.Abs(layout.SessionDir(id)))
	return err == nil && st.State == fslease.Held
}

// ChangedWithoutMark implements searchhost.Host.
func (h searchHost) ChangedWithoutMark(ids []session.SessionID) bool {
	return h.s.cat.ChangedWithoutMark(ids, h.IsSession)
}

// ReadLog implements searchhost.Host with the store's reads (view.go).
func (h searchHost) ReadLog(ctx context.Context, id session.SessionID, fn func(searchhost.Log) error) error {
	return h.s.read(ctx, id, func(v *logfile.View) error {
		return fn(logRead{s: h.s, id: id, v: v})
	})
}

// logRead is a view of a log as the search index reads it
// (searchhost.Log).
type logRead struct {
	s  *Store
	id session.SessionID
	v  *logfile.View
}

func (l logRead) Stat() (fs.FileInfo, error) { return l.v.F.Stat() }
func (l logRead) Size() int64                { return l.v.Size }

func (l logRead) Latest() (*record.Rec, error) {
	last, _, err := logfile.Latest(l.s.fs, l.id, l.v)
	return last, err
}

func (l logRead) Before(r *record.Rec) (*record.Rec, error) { return l.v.Back.Before(r) }

func (l logRead) LoadLatest() (*record.Rec, sessionstore.Record, error) {
	return l.s.loadLatest(l.id, l.v, false)
}

func (l logRead) History() searchhost.History { return logfile.NewScan(l.s.fs, l.id, l.v) }

// Resolve implements searchhost.Log for the messages appended since a
// row (the search index's readAppended): a few blobs of a session that
// may have many, read without listing its blobs/ (NewTailCache), each
// part's text sharing the bytes read (logfile.ResolveShared: a search
// under load reads every blob appended since the index's rows, and a
// copy of each was a fifth of its CPU).
func (l logRead) Resolve(msgs sessnap.Messages) error {
	c := blobfile.NewTailCache(l.s.fs, l.id)
	defer c.Close()
	return logfile.ResolveShared(msgs, c.Fetch)
}
