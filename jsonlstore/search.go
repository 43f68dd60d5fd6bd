package jsonlstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchdb"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The search index (FORMAT.md "The search index") is a cache of every
// session's titles and messages in ROOT/.search/index.db, a SQLite
// database with an FTS5 table (package searchdb). Nothing is ever derived
// from it but search hits, and those only after it proves each session's
// row current:
//
//   - Writers feed it (searchfeed.go): after an append is durable, the
//     writer queues the messages the revision added; the store writes
//     the queue in the background, batched, in one transaction that
//     never waits for another process's (busy: it tries again later,
//     then gives up). An index update never blocks or fails an append.
//   - Each session's row records the revision it holds and the state of
//     the log (identity, size, modification time) after that revision.
//     Search compares it with a stat of every log: a session whose log
//     differs (appended by a process that did not index it, one whose
//     update was skipped, compacted, repaired) is read from its log and
//     brought up to date before the query runs; a row whose session is
//     gone is removed. So a search answers for every session as it is on
//     disk, whatever state the index is in.
//   - A missing index is created by the first search, which indexes every
//     session (the store's Logger hears that the index is being built); a
//     damaged one, or one of another version, is removed and built anew.
//     ReindexSearch rebuilds it on request.
//   - Where the index cannot be written (read-only media, a lock held too
//     long), the sessions it lacks are searched in memory from their
//     logs: slower, never wrong.

var _ sessionstore.Searcher = (*Store)(nil)

// Where the search index lives, relative to the root.
const (
	// SearchDir is the directory of the search index. Its name starts
	// with a dot, so it is never a session; backups leave it out.
	SearchDir  = ".search"
	searchFile = SearchDir + "/index.db"
	searchLock = SearchDir + "/lock"
)

// manyStale is how many sessions a search must bring into the index
// before the Logger hears that the index is being built.
const manyStale = 64

// searchIndex is the store's handle on its search index and the queue of
// what writers appended.
type searchIndex struct {
	mu     sync.Mutex // guards db, dbID and closed; held across a use of db
	db     *searchdb.DB
	dbID   vfs.Identity
	closed bool // by Close: nothing opens the index any more

	feedMu sync.Mutex // guards feed
	feed   searchFeed
}

// openSearch returns the open index, opening it when it is not open or
// its file was replaced. Without create, a missing index is
// searchdb.ErrMissing. With create, a missing, damaged or outdated
// index is made anew. si.mu must be held.
func (s *Store) openSearchLocked(ctx context.Context, create bool) (*searchdb.DB, error) {
	si := &s.search
	if si.closed {
		return nil, sessionstore.ErrClosed
	}
	fi, err := s.fs.Lstat(searchFile)
	switch {
	case err == nil && si.db != nil && vfs.IdentityOf(fi) == si.dbID:
		return si.db, nil
	case errors.Is(err, fs.ErrNotExist) && !create:
		s.closeSearchLocked()
		return nil, searchdb.ErrMissing
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, opErr("search index", "", err)
	case err == nil && !fi.Mode().IsRegular():
		return nil, pathErr("search index", "", searchFile, errors.New("not a regular file"))
	}
	s.closeSearchLocked()
	if err != nil { // missing, and create
		if err := s.makeSearchFile(); err != nil {
			return nil, err
		}
	}
	db, err := searchdb.Open(ctx, s.abs(searchFile), searchdb.OpenOptions{Create: create})
	if errors.Is(err, searchdb.ErrDamaged) && create {
		s.opts.Logger.Warn("jsonlstore: search index damaged or of another version: building it anew", "err", err)
		if err = s.replaceSearchFile(); err == nil {
			db, err = searchdb.Open(ctx, s.abs(searchFile), searchdb.OpenOptions{Create: true})
		}
	}
	if err != nil {
		return nil, err
	}
	if fi, err = s.fs.Lstat(searchFile); err != nil {
		_ = db.Close() // opened for nothing
		return nil, opErr("search index", "", err)
	}
	si.db, si.dbID = db, vfs.IdentityOf(fi)
	return db, nil
}

func (s *Store) closeSearchLocked() {
	if s.search.db != nil {
		_ = s.search.db.Close() // a cache: what it did not write, a later search redoes
		s.search.db = nil
	}
}

// makeSearchFile makes the search index's directory and, under its lock,
// clears what a deleted index left (its -wal and -shm would otherwise be
// taken for the new file's).
func (s *Store) makeSearchFile() error {
	if err := s.fs.Mkdir(SearchDir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return opErr("search index", "", err)
	}
	return s.withSearchLock(func() error {
		if _, err := s.fs.Lstat(searchFile); err == nil {
			return nil // another process made it meanwhile
		}
		for _, ext := range []string{"-wal", "-shm", "-journal"} {
			if err := s.fs.Remove(searchFile + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return opErr("search index", "", err)
			}
		}
		// Made here, so that it has the store's permissions (SQLite gives
		// its -wal and -shm the database file's).
		f, err := s.fs.OpenFile(searchFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if err != nil {
			return opErr("search index", "", err)
		}
		return f.Close()
	})
}

// replaceSearchFile removes a damaged index and makes a new one.
func (s *Store) replaceSearchFile() error {
	err := s.withSearchLock(func() error {
		if err := s.fs.Remove(searchFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return opErr("search index", "", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.makeSearchFile()
}

// withSearchLock runs fn holding the search directory's lock, which
// orders the processes that create or remove the index file.
func (s *Store) withSearchLock(fn func() error) error {
	f, err := os.OpenFile(s.abs(searchLock), os.O_RDWR|os.O_CREATE, filePerm) //nolint:gosec // G304: a fixed name under the store's root
	if err != nil {
		return opErr("search index lock", "", err)
	}
	defer func() { _ = f.Close() }() // closing releases the lock
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return opErr("search index lock", "", err)
	}
	return fn()
}

// Search implements sessionstore.Searcher: it brings the index up to
// date with every session on disk (see above), then queries it.
func (s *Store) Search(ctx context.Context, q sessionstore.SearchQuery) (sessionstore.SearchResult, error) {
	if s.closed.Load() {
		return sessionstore.SearchResult{}, sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return sessionstore.SearchResult{}, err
	}
	q, err := q.Normalize()
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	fq, _ := fulltext.Parse(q.Text) // checked by Normalize
	s.flushSearch(ctx, searchWait)
	s.search.mu.Lock()
	defer s.search.mu.Unlock()
	db, err := s.openSearchLocked(ctx, true)
	if err != nil {
		if endsStoreWide(err) {
			return sessionstore.SearchResult{}, err
		}
		s.opts.Logger.Warn("jsonlstore: search index unusable: searching the logs", "err", err)
		db = nil
	}
	cu, err := s.catchUpLocked(ctx, db)
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	res := sessionstore.SearchResult{Hits: []sessionstore.SearchHit{}, Indexed: cu.indexed, Unreadable: cu.unreadable}
	var hits []fulltext.Hit
	if db != nil {
		// A row proven current by a probe of its log (which may have
		// followed a symlinked directory) is a hit only in a session
		// directory: checked for the sessions hits come from, each once.
		dirs := map[session.SessionID]bool{}
		skip := func(id session.SessionID) bool {
			if cu.skip[id] {
				return true
			}
			dir, ok := dirs[id]
			if !ok {
				dir = s.isSessionDir(id)
				dirs[id] = dir
			}
			return !dir
		}
		hits, err = db.Search(ctx, fq, searchdb.Filter{NoTools: q.NoTools, Labels: q.Labels, Project: q.Project,
			ProjectTree: q.ProjectTree, Skip: skip}, q.Limit)
		if err != nil {
			return sessionstore.SearchResult{}, err
		}
	}
	if cu.mem != nil {
		filter := q.Filter()
		hits = append(hits, cu.mem.Search(fq, fulltext.Filter{NoTools: q.NoTools, Session: func(project string, labels map[string]string) bool {
			return filter.Match(&summary.Summary{Project: project, Labels: labels})
		}}, q.Limit)...)
		fulltext.SortHits(hits)
		hits = hits[:min(len(hits), q.Limit)]
	}
	for _, h := range hits {
		res.Hits = append(res.Hits, sessionstore.SearchHitOf(h))
	}
	return res, nil
}

// probedLog is the state of a session's log as probeLogs found it.
type probedLog struct {
	fi  fs.FileInfo
	err error
}

// probeLogs returns the names in the root that may be sessions and the
// state of each one's log, to prove the index's rows current: the root's
// names (one pass) and a probe of each log (vfs.Probe: one system call
// each, on every core), so that a search of ten thousand sessions costs
// ten thousand cheap calls. A name is a session when its log matches its
// row (the row was read through the store, from a session directory) or,
// when it does not, when it is a session directory (isSessionDir).
func (s *Store) probeLogs(ctx context.Context) ([]session.SessionID, []probedLog, error) {
	names, err := vfs.ReadDirNames(s.fs, ".")
	if err != nil {
		return nil, nil, opErr("list root", "", err)
	}
	ids := make([]session.SessionID, 0, len(names))
	for _, n := range names {
		if sessionstore.ValidateID(session.SessionID(n)) == nil {
			ids = append(ids, session.SessionID(n))
		}
	}
	logs := make([]probedLog, len(ids))
	if err := parallel(ctx, len(ids), func(i int) error {
		logs[i].fi, logs[i].err = vfs.Probe(s.fs, logPath(ids[i]))
		return nil
	}); err != nil {
		return nil, nil, err
	}
	return ids, logs, nil
}

// isSessionDir reports whether name in the root is a directory (not a
// symlink to one), as sessionIDs lists sessions.
func (s *Store) isSessionDir(id session.SessionID) bool {
	fi, err := s.fs.Lstat(sessionDir(id))
	return err == nil && fi.IsDir()
}

// caughtUp is what bringing the index up to date found.
type caughtUp struct {
	indexed    int // sessions (re)indexed
	unreadable []summary.Unreadable
	// skip are the sessions whose rows must not be used: unreadable, gone
	// but not yet removed, or held in mem instead.
	skip map[session.SessionID]bool
	// mem holds the sessions the index could not take.
	mem *fulltext.Index
}

// catchUpLocked brings db up to date with every session on disk: rows of
// sessions that are gone are removed, sessions whose log is not the one
// their row was read from are read again. With db nil (no usable index)
// every session is read into memory. s.search.mu must be held.
func (s *Store) catchUpLocked(ctx context.Context, db *searchdb.DB) (caughtUp, error) {
	cu := caughtUp{skip: map[session.SessionID]bool{}}
	// The logs are probed while the index's rows are read.
	var (
		ids    []session.SessionID
		logs   []probedLog
		errIDs error
	)
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		ids, logs, errIDs = s.probeLogs(ctx)
	}()
	states := map[session.SessionID]searchdb.State{}
	var err error
	if db != nil {
		if states, err = db.States(ctx); err != nil {
			if endsStoreWide(err) {
				<-probed
				return cu, err
			}
			s.opts.Logger.Warn("jsonlstore: search index unreadable: searching the logs", "err", err)
			db = nil
		}
	}
	<-probed
	if errIDs != nil {
		return cu, errIDs
	}
	onDisk := make(map[session.SessionID]bool, len(ids))
	var stale []session.SessionID
	for i, id := range ids {
		fi, err := logs[i].fi, logs[i].err
		st, ok := states[id]
		current := err == nil && fi.Mode().IsRegular() && ok && st.Proof == proofOf(fi)
		if !current && !s.isSessionDir(id) {
			continue // gone, or no session directory
		}
		onDisk[id] = true
		if !current {
			stale = append(stale, id) // read below, which says what is wrong, if anything is
		}
	}
	var gone []session.SessionID
	for id := range states {
		if !onDisk[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		ups := make([]searchdb.Update, len(gone))
		for i, id := range gone {
			ups[i] = searchdb.Update{ID: id, Delete: true}
		}
		if _, err := db.Apply(ctx, ups, searchWait); err != nil {
			for _, id := range gone {
				cu.skip[id] = true
			}
		}
	}
	if len(stale) >= manyStale {
		s.opts.Logger.Warn("jsonlstore: search index is being built", "sessions", len(stale), "of", len(ids))
	}
	read := make([]*indexed, len(stale))
	errs := make([]error, len(stale))
	err = parallel(ctx, len(stale), func(i int) error {
		var hint *searchdb.State
		if st, ok := states[stale[i]]; ok {
			hint = &st
		}
		read[i], errs[i] = s.readIndexed(ctx, stale[i], hint)
		return nil
	})
	if err != nil {
		return cu, err
	}
	var ups []searchdb.Update
	var upIdx []int
	for i, id := range stale {
		switch {
		case errs[i] == nil && read[i].update.Reset:
			ups = append(ups, incremental(read[i], states[id]))
			upIdx = append(upIdx, i)
		case errs[i] == nil:
			ups = append(ups, read[i].update) // only what the row lacks
			upIdx = append(upIdx, i)
		case endsStoreWide(errs[i]):
			return cu, errs[i]
		case errors.Is(errs[i], sessionstore.ErrNotFound):
			cu.skip[id] = true // deleted meanwhile
		default:
			cu.skip[id] = true
			cu.unreadable = append(cu.unreadable, summary.UnreadableOf(id, errs[i]))
		}
	}
	applied := make([]bool, len(ups))
	if db != nil {
		for from := 0; from < len(ups); from += searchBatch {
			to := min(from+searchBatch, len(ups))
			ok, err := db.Apply(ctx, ups[from:to], searchWait)
			if err != nil {
				if endsStoreWide(err) {
					return cu, err
				}
				s.opts.Logger.Warn("jsonlstore: search index not updated: searching the logs", "err", err)
				break
			}
			copy(applied[from:], ok)
		}
	}
	for k, i := range upIdx {
		cu.indexed++
		if applied[k] {
			continue
		}
		// The index did not take it (unwritable, or changed meanwhile):
		// the session is searched in memory, from what was read (all of
		// it: the whole history).
		ix := read[i]
		if !ix.update.Reset {
			whole, err := s.readIndexed(ctx, ix.update.ID, nil)
			if err != nil {
				cu.unreadable = append(cu.unreadable, summary.UnreadableOf(ix.update.ID, err))
				cu.skip[ix.update.ID] = true
				continue
			}
			ix = whole
		}
		if cu.mem == nil {
			cu.mem = fulltext.NewIndex()
		}
		u := &ix.update
		docs, revs := make([]fulltext.Doc, len(u.Add)), make([]uint64, len(u.Add))
		for j := range u.Add {
			docs[j], revs[j] = u.Add[j].Doc, u.Add[j].Rev
		}
		cu.mem.PutDocs(fulltext.Revision{ID: u.ID, Revision: u.Rev, Updated: u.Updated, Title: u.Title, Project: u.Project, Labels: u.Labels},
			u.TitleRev, docs, revs)
		cu.skip[u.ID] = true
	}
	return cu, nil
}

// incremental is the update that brings a row in state st to what ix
// read: only the messages after the row's when the row holds the
// conversation's first messages (its digest says so), else a reset.
func incremental(ix *indexed, st searchdb.State) searchdb.Update {
	u := ix.update
	if st.ID == "" || st.Messages > u.Messages || ix.digest[st.Messages] != st.Digest || st.Rev > u.Rev {
		return u // a reset
	}
	for _, m := range u.Add[:st.Messages] {
		if m.Rev > st.Rev {
			return u // the log says an indexed message appeared later: start again
		}
	}
	u.Reset, u.FromRev, u.FromMessages = false, st.Rev, st.Messages
	u.Add = u.Add[st.Messages:]
	return u
}

// searchBatch is how many sessions one transaction of a catch-up takes.
const searchBatch = 32

// ReindexSearch rebuilds the search index from the logs: it empties the
// index, then indexes every session. Searches meanwhile stay correct
// (they index what they find missing). It reports what it indexed.
func (s *Store) ReindexSearch(ctx context.Context) (sessionstore.SearchIndexReport, error) {
	if s.closed.Load() {
		return sessionstore.SearchIndexReport{}, sessionstore.ErrClosed
	}
	s.flushSearch(ctx, searchWait)
	s.search.mu.Lock()
	defer s.search.mu.Unlock()
	db, err := s.openSearchLocked(ctx, true)
	if err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	if err := db.Clear(ctx, searchWait); err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	cu, err := s.catchUpLocked(ctx, db)
	if err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	rep := sessionstore.SearchIndexReport{Sessions: cu.indexed, Unreadable: cu.unreadable}
	if cu.mem != nil {
		return rep, opErr("search index", "", errors.New("some sessions could not be written to it (another process held it)"))
	}
	return rep, nil
}
