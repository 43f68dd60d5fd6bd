package searchindex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
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
//     the queue in the background, batched, one process at a time
//     (.search/writer; busy for a second: it tries again later, then
//     gives up). An index update never blocks or fails an append.
//   - Each session's row records the revision it holds and the state of
//     the log (identity, size, modification time) after that revision.
//     Search compares it with the state of every log: a session whose
//     log differs (appended by a process that did not index it, one whose
//     update was skipped, compacted, repaired) is read from its log and
//     brought up to date before the query runs; a row whose session is
//     gone is removed. So a search answers for every session as it is on
//     disk, whatever state the index is in.
//   - A search never waits for another process's write to the index (a
//     writer's queue, another search): it tries its update once, and
//     what the index does not take is searched beside it
//     (searchdb.Pending): the messages appended since a row, a title
//     changed since, or, when the row cannot serve (the log rewritten,
//     its labels or project changed), the whole session in its place.
//     Those hits are ranked as the index ranks them once it holds them,
//     and the row is left to the writers' queues and later searches. A
//     row a writer's queue extends meanwhile serves for the messages it
//     then holds, once their digest proves them the ones read
//     (searchdb.Pending's FromDigest).
//   - The state of a log is the catalog's entry where the catalog can be
//     believed and the session has no mark (Host.Sessions: such a log has
//     not changed since its entry was made), a probe of the log
//     otherwise; and a hit from a row taken as current on the catalog's
//     word counts only once a probe of its log agrees. One that does not
//     (a log changed behind the catalog's back) makes the search prove
//     every row by a probe, and the catalog is rebuilt. A search keeps
//     the catalog as a listing does.
//   - A missing index is created by the first search, which indexes every
//     session (the store's Logger hears that the index is being built); a
//     damaged one, or one of another version, is removed and built anew.
//     Reindex (the store's ReindexSearch) rebuilds it on request.
//   - Where the index cannot be opened (another user's, junk at its
//     path), every session is searched in memory from its log: slower,
//     never wrong.

// manyStale is how many sessions a search must bring into the index
// before the Logger hears that the index is being built.
const manyStale = 64

// Search implements searchhost.Index: it brings the index up to date
// with every session on disk (see above), then queries it.
func (x *Index) Search(ctx context.Context, q sessionstore.SearchQuery) (sessionstore.SearchResult, error) {
	if err := ctx.Err(); err != nil {
		return sessionstore.SearchResult{}, err
	}
	q, err := q.Normalize()
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	fq, _ := fulltext.Parse(q.Text) // checked by Normalize
	// This handle's queue, if the index is free: what it does not write
	// now, the search reads from the logs, and the queue tries again.
	x.flushSearch(ctx, searchdb.NoWait)
	x.mu.Lock()
	res, cl, err := x.searchLocked(ctx, q, fq)
	x.mu.Unlock()
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	cl.keep(ctx) // as a listing does
	return res, nil
}

// searchLocked is Search with x.mu held. It also says what the
// catalog needs.
func (x *Index) searchLocked(ctx context.Context, q sessionstore.SearchQuery, fq fulltext.Query) (sessionstore.SearchResult, catalogKeep, error) {
	db, err := x.openSearchLocked(ctx, true, searchWait)
	if err != nil {
		if endsStoreWide(err) {
			return sessionstore.SearchResult{}, catalogKeep{}, err
		}
		x.log.Warn("jsonlstore: search index unusable: searching the logs", "err", err)
		db = nil
	}
	res, cl, err := x.searchWith(ctx, db, q, fq)
	if db != nil && searchIndexBad(err) {
		// Found damaged in use (pages SQLite finds corrupt, a schema
		// another process changed): replaced by a new index, and the
		// search done again.
		x.log.Warn("jsonlstore: search index damaged: building it anew", "err", err)
		id := x.dbID
		if db, err = x.replaceSearchLocked(ctx, &id, searchWait); err != nil {
			if endsStoreWide(err) {
				return sessionstore.SearchResult{}, catalogKeep{}, err
			}
			x.log.Warn("jsonlstore: search index unusable: searching the logs", "err", err)
			db = nil
		}
		res, cl, err = x.searchWith(ctx, db, q, fq)
	}
	if db != nil && (searchIndexBad(err) || errors.Is(err, searchdb.ErrSlow)) {
		x.log.Warn("jsonlstore: search index unusable: searching the logs", "err", err)
		res, cl, err = x.searchWith(ctx, nil, q, fq)
	}
	return res, cl, err
}

// searchWith runs a search with the index db (nil: none, every session
// is searched in memory).
func (x *Index) searchWith(ctx context.Context, db *searchdb.DB, q sessionstore.SearchQuery, fq fulltext.Query) (sessionstore.SearchResult, catalogKeep, error) {
	rebuild := false // the catalog was caught out by a log changed behind its back
	for probeAll := false; ; probeAll = true {
		cu, err := x.catchUpLocked(ctx, db, probeAll, searchdb.NoWait)
		if rebuild {
			cu.catalog.rebuild = true
		}
		if err != nil {
			return sessionstore.SearchResult{}, cu.catalog, err
		}
		res := sessionstore.SearchResult{Hits: []sessionstore.SearchHit{}, Indexed: cu.indexed, Unreadable: cu.unreadable}
		var hits []fulltext.Hit
		var wrong []session.SessionID // hits whose logs are not as the catalog vouched
		if db != nil {
			// A row proven current by a probe of its log (which may have
			// followed a symlinked directory) is a hit only in a session
			// directory; one taken as current on the catalog's word is a
			// hit only once a probe of its log agrees. Both are checked
			// for the sessions hits come from, each once.
			dirs := map[session.SessionID]bool{}
			skip := func(id session.SessionID) bool {
				if cu.skip[id] {
					return true
				}
				dir, ok := dirs[id]
				if !ok {
					dir = x.h.IsSession(id)
					if p, vouched := cu.vouched[id]; vouched && dir {
						x.stats.probes.Add(1)
						if ls := probedState(x.h.ProbeLog(id)); !ls.ok || ls.proof != p {
							wrong, dir = append(wrong, id), false
						}
					}
					dirs[id] = dir
				}
				return !dir
			}
			hits, err = db.Search(ctx, fq, searchdb.Filter{NoTools: q.NoTools, Labels: q.Labels, Project: q.Project,
				ProjectTree: q.ProjectTree, Skip: skip, Pending: cu.pending}, q.Limit)
			if err != nil {
				return sessionstore.SearchResult{}, cu.catalog, err
			}
		}
		if len(wrong) > 0 && !probeAll {
			// Changed during the search (its holder marked it since the
			// catalog was looked at), deleted, or changed behind the
			// catalog's back: the search proves every row by its log,
			// and in the last case the catalog is rebuilt, as a listing
			// does.
			x.stats.reproved.Add(1)
			rebuild = x.h.ChangedWithoutMark(wrong)
			continue
		}
		if cu.mem != nil {
			hits = append(hits, cu.mem.Search(fq, adapter.SearchFilter(q), q.Limit)...)
			fulltext.SortHits(hits)
			hits = hits[:min(len(hits), q.Limit)]
		}
		res.Hits = append(res.Hits, adapter.SearchHits(hits)...)
		return res, cu.catalog, nil
	}
}

// logState is the state of a session's log as a search found it:
// probed, or vouched for by the catalog.
type logState struct {
	proof searchdb.Proof
	ok    bool // a regular file
	// vouched: by the catalog, without a probe; a hit from the session's
	// row proves it by a probe (Search).
	vouched bool
}

func probedState(fi fs.FileInfo, err error) logState {
	if err != nil || !fi.Mode().IsRegular() {
		return logState{}
	}
	return logState{proof: proofOf(fi), ok: true}
}

// logStates returns the names in the root that may be sessions and the
// state of each one's log, to prove the index's rows current. Where the
// catalog can be believed (Host.Sessions), an unmarked session's entry
// describes its log as it is, and stands in for a probe; the other
// sessions' logs are probed (one system call each, on every core). With
// probeAll, or without a catalog to believe, every log is probed: ten
// thousand sessions cost ten thousand cheap calls. A name is a session
// when its log matches its row (the row was read through the store,
// from a session directory) or, when it does not, when it is a session
// directory (Host.IsSession). cl says what the catalog needs.
func (x *Index) logStates(ctx context.Context, probeAll bool) (ids []session.SessionID, logs []logState, cl catalogKeep, err error) {
	ss, err := x.h.Sessions(ctx, probeAll)
	if err != nil {
		return nil, nil, cl, err
	}
	cl.keepFn = ss.Keep
	logs = make([]logState, len(ss.IDs))
	for i, l := range ss.Logs {
		if l.Vouched {
			logs[i] = logState{proof: searchdb.Proof(l.Proof), ok: true, vouched: true}
		}
	}
	err = x.probeLogs(ctx, ss.IDs, logs)
	return ss.IDs, logs, cl, err
}

// catalogKeep is what the catalog needs after a search: the host's Keep,
// told whether a log was found changed behind the catalog's back.
type catalogKeep struct {
	keepFn  func(ctx context.Context, rebuild bool)
	rebuild bool
}

func (c catalogKeep) keep(ctx context.Context) {
	if c.keepFn != nil {
		c.keepFn(ctx, c.rebuild)
	}
}

// probeLogs probes the log of every session of ids whose state the
// catalog did not vouch for, on every core.
func (x *Index) probeLogs(ctx context.Context, ids []session.SessionID, logs []logState) error {
	var todo []int
	for i := range logs {
		if !logs[i].vouched {
			todo = append(todo, i)
		}
	}
	x.stats.probes.Add(int64(len(todo)))
	x.stats.vouched.Add(int64(len(ids) - len(todo)))
	return layout.Parallel(ctx, len(todo), func(k int) error {
		i := todo[k]
		logs[i] = probedState(x.h.ProbeLog(ids[i]))
		return nil
	})
}

// caughtUp is what bringing the index up to date found.
type caughtUp struct {
	indexed    int // sessions (re)indexed
	unreadable []summary.Unreadable
	// skip are the sessions whose rows must not be used: unreadable, gone
	// but not yet removed, or held in mem instead.
	skip map[session.SessionID]bool
	// vouched are the rows taken as current on the catalog's word, with
	// the state of the log it vouched for: a hit from one proves it.
	vouched map[session.SessionID]searchdb.Proof
	// catalog is what the catalog needs (a search keeps it as a listing
	// does).
	catalog catalogKeep
	// pending are what the index could not take of the sessions read,
	// to search beside it (searchdb.Pending).
	pending []searchdb.Pending
	// mem holds the sessions read when there is no index.
	mem *fulltext.Index
}

// catchUpLocked brings db up to date with every session on disk: rows of
// sessions that are gone are removed, sessions whose log is not the one
// their row was read from are read again (logStates says how a search
// knows). With db nil (no usable index) every session is read into
// memory. x.mu must be held.
func (x *Index) catchUpLocked(ctx context.Context, db *searchdb.DB, probeAll bool, wait searchdb.Wait) (caughtUp, error) {
	cu := caughtUp{skip: map[session.SessionID]bool{}, vouched: map[session.SessionID]searchdb.Proof{}}
	// The logs' states are found while the index's rows are read.
	var (
		ids    []session.SessionID
		logs   []logState
		errIDs error
	)
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		ids, logs, cu.catalog, errIDs = x.logStates(ctx, probeAll)
	}()
	// Only the rows' proofs: what else the index holds is read below for
	// the rows found stale.
	proofs := map[session.SessionID]searchdb.Proof{}
	var err error
	if db != nil {
		if proofs, err = db.Proofs(ctx); err != nil {
			if endsStoreWide(err) || searchIndexBad(err) {
				<-probed
				return cu, err
			}
			x.log.Warn("jsonlstore: search index unreadable: searching the logs", "err", err)
			db = nil
		}
	}
	<-probed
	if errIDs != nil {
		return cu, errIDs
	}
	onDisk := make(map[session.SessionID]bool, len(ids))
	var stale, staleRows []session.SessionID
	for i, id := range ids {
		ls := &logs[i]
		p, ok := proofs[id]
		current := ls.ok && ok && p == ls.proof
		if !current && !x.h.IsSession(id) {
			continue // gone, or no session directory
		}
		onDisk[id] = true
		if current && ls.vouched {
			cu.vouched[id] = p
		}
		if !current {
			stale = append(stale, id) // read below, which says what is wrong, if anything is
			if ok {
				staleRows = append(staleRows, id)
			}
		}
	}
	var gone []session.SessionID
	for id := range proofs {
		if !onDisk[id] {
			gone = append(gone, id)
		}
	}
	states := map[session.SessionID]searchdb.State{}
	if db != nil && len(staleRows) > 0 {
		if states, err = db.StatesOf(ctx, staleRows); err != nil {
			if endsStoreWide(err) || searchIndexBad(err) {
				return cu, err
			}
			// The stale rows are then replaced whole, not extended.
			x.log.Warn("jsonlstore: search index rows unreadable: indexing the stale sessions anew", "err", err)
			states = map[session.SessionID]searchdb.State{}
		}
	}
	if len(gone) > 0 {
		ups := make([]searchdb.Update, len(gone))
		for i, id := range gone {
			ups[i] = searchdb.Update{ID: id, Delete: true}
		}
		if _, err := db.Apply(ctx, ups, wait); err != nil {
			if endsStoreWide(err) || searchIndexBad(err) {
				return cu, err
			}
			for _, id := range gone {
				cu.skip[id] = true
			}
		}
	}
	if len(stale) >= manyStale {
		x.log.Warn("jsonlstore: search index is being built", "sessions", len(stale), "of", len(ids))
	}
	read := make([]*indexed, len(stale))
	errs := make([]error, len(stale))
	err = layout.Parallel(ctx, len(stale), func(i int) error {
		var hint *searchdb.State
		if st, ok := states[stale[i]]; ok {
			hint = &st
		}
		read[i], errs[i] = x.readIndexed(ctx, stale[i], hint)
		return nil
	})
	if err != nil {
		return cu, err
	}
	var reads []*indexed // the sessions read, to apply
	for i, id := range stale {
		switch {
		case errs[i] == nil:
			reads = append(reads, read[i])
		case endsStoreWide(errs[i]):
			return cu, errs[i]
		case errors.Is(errs[i], sessionstore.ErrNotFound):
			cu.skip[id] = true // deleted meanwhile
		default:
			cu.skip[id] = true
			cu.unreadable = append(cu.unreadable, summary.UnreadableOf(id, errs[i]))
		}
	}
	applied := make([]bool, len(reads))
	if db != nil {
		if err := x.applyOwnLocked(ctx, db, reads, states, applied, wait); err != nil {
			if endsStoreWide(err) || searchIndexBad(err) {
				return cu, err
			}
			if !errors.Is(err, searchdb.ErrBusy) {
				x.log.Warn("jsonlstore: search index not updated: searching the logs", "err", err)
			}
		}
	}
	for k, ix := range reads {
		cu.indexed++
		if applied[k] {
			continue
		}
		// The index did not take it (another process writes it, it is
		// unwritable, or it changed meanwhile beyond what was read): what
		// was read is searched beside the index. The index's row serves
		// for what it holds as the session still has it.
		x.stats.inMemory.Add(1)
		id := ix.head.ID
		st, has := states[id]
		if db != nil && has {
			if p, ok := ix.pending(st); ok {
				cu.pending = append(cu.pending, p)
				continue
			}
		}
		if !ix.whole() {
			whole, err := x.readIndexed(ctx, id, nil)
			if err != nil {
				cu.unreadable = append(cu.unreadable, summary.UnreadableOf(id, err))
				cu.skip[id] = true
				continue
			}
			ix = whole
		}
		if db != nil {
			cu.pending = append(cu.pending, ix.pendingWhole())
			continue
		}
		// No index: every session is searched in memory.
		if cu.mem == nil {
			cu.mem = fulltext.NewIndex()
		}
		h := &ix.head
		docs, revs := make([]fulltext.Doc, len(ix.docs)), make([]uint64, len(ix.docs))
		for j := range ix.docs {
			docs[j], revs[j] = ix.docs[j].Doc, ix.docs[j].Rev
		}
		cu.mem.PutDocs(fulltext.Revision{ID: id, Revision: h.Rev, Updated: h.Updated, Title: h.Title, Project: h.Project, Labels: h.Labels},
			h.TitleRev, docs, revs)
		cu.skip[id] = true
	}
	return cu, nil
}

// pending is what ix read beyond the row in state st, to search beside
// the index (searchdb.Pending): the messages after the row's, and the
// title when it changed. ok is false when the row's other messages are
// not the session's as ix read it (ix is not a read after the row's
// messages), or its project or labels changed (the index would filter
// its hits by the row's).
func (ix *indexed) pending(st searchdb.State) (searchdb.Pending, bool) {
	h := &ix.head
	if ix.whole() || ix.base != st.Messages || searchdb.StoredProject(h.Project) != st.Project || !maps.Equal(h.Labels, st.Labels) {
		return searchdb.Pending{}, false
	}
	p := searchdb.Pending{ID: h.ID, Title: h.Title, Updated: h.Updated, Project: h.Project, Labels: h.Labels,
		From: ix.base, TitleChanged: h.Title != st.Title, Docs: ix.docs, FromRev: st.Rev, FromDigest: ix.from, Rev: h.Rev}
	if p.TitleChanged && h.Title != "" {
		p.Docs = append(ix.titleDoc(), ix.docs...)
	}
	return p, true
}

// pendingWhole is what ix, a read of the whole log, read, to search in
// place of the session's row (if any).
func (ix *indexed) pendingWhole() searchdb.Pending {
	h := &ix.head
	p := searchdb.Pending{ID: h.ID, Title: h.Title, Updated: h.Updated, Project: h.Project, Labels: h.Labels,
		From: 0, TitleChanged: true, Docs: ix.docs}
	if h.Title != "" {
		p.Docs = append(ix.titleDoc(), ix.docs...)
	}
	return p
}

// titleDoc is the document of ix's title, alone in a slice.
func (ix *indexed) titleDoc() []searchdb.Message {
	return []searchdb.Message{{Index: -1, Rev: ix.head.TitleRev, Doc: fulltext.Doc{Text: ix.head.Title}}}
}

// searchHolderWindow is how far, in time of its appends, a row may lag
// its log and still be left to the session's holder to write: a row of
// a session whose lease a live writer holds, behind its log by appends
// all made within this window (the first after the row's revision to
// the last, by their records' times: a session appended to again after
// a pause lags by its new appends, not by the pause), is searched beside
// the index (searchdb.Pending) and not written, since the holder's own
// queue (searchfeed.go) is about to write it, and two processes writing
// the same rows only make each other wait (under load, searches that
// wrote what writers were about to write kept the index's write lock so
// busy that the writers' queues fell further behind, and every search
// read more). A row that lags by more (its holder does not index, or
// cannot keep up) is written by the search, so what a search reads
// beside the index stays bounded by the window's appends.
const searchHolderWindow = 2 * time.Second

// applyOwnLocked is applyLocked for the reads this search writes itself:
// not those left to their holders (searchHolderWindow), which stay
// unapplied.
func (x *Index) applyOwnLocked(ctx context.Context, db *searchdb.DB, reads []*indexed, states map[session.SessionID]searchdb.State, applied []bool, wait searchdb.Wait) error {
	var own []*indexed
	var at []int
	for k, ix := range reads {
		if x.leftToHolder(ctx, ix, states) {
			x.stats.leftToHolder.Add(1)
			continue
		}
		own, at = append(own, ix), append(at, k)
	}
	if len(own) == 0 {
		return nil
	}
	ok := make([]bool, len(own))
	err := x.applyLocked(ctx, db, own, states, ok, wait)
	for j, k := range at {
		applied[k] = ok[j]
	}
	return err
}

// leftToHolder reports whether the search leaves ix, a read of what was
// appended after its row, to the session's holder to write: the row is
// of the same log, the appends read were made within x.holderWindow
// (the first after the row's revision to the last), and a live process
// holds the session's lease.
func (x *Index) leftToHolder(ctx context.Context, ix *indexed, states map[session.SessionID]searchdb.State) bool {
	st, ok := states[ix.head.ID]
	if !ok || ix.whole() || ix.first.IsZero() || x.holderWindow <= 0 {
		return false
	}
	p, q := st.Proof, ix.head.Proof
	if p.Dev != q.Dev || p.Ino != q.Ino || ix.head.Updated.Sub(ix.first) > x.holderWindow {
		return false
	}
	return x.h.Held(ctx, ix.head.ID)
}

// searchRebases is how often a catch-up builds again, on the rows as they
// are now, the updates that found their rows changed by another process
// (a writer's queue, another search) between the read of the rows and
// the update.
const searchRebases = 3

// applyLocked writes what reads read to db, each read's update built on
// its row's state in states, searchBatch sessions a transaction, waiting
// for another process's write as wait says, and sets applied for those
// the index took or needs no more. An update that finds its row changed
// meanwhile is built again on the row as it is now: a row that now
// holds the revision read or a later one, read from the same log file,
// needs nothing (another process brought it there); one that holds a
// revision the read went through is extended from it; a read of the
// whole log replaces any other. The error is what kept it from writing
// the rest.
func (x *Index) applyLocked(ctx context.Context, db *searchdb.DB, reads []*indexed, states map[session.SessionID]searchdb.State, applied []bool, wait searchdb.Wait) error {
	for round := 0; ; round++ {
		var ups []searchdb.Update
		var upK []int
		for k, ix := range reads {
			if applied[k] {
				continue
			}
			st, has := states[ix.head.ID]
			if round > 0 && has && st.Rev >= ix.head.Rev && st.Proof.Dev == ix.head.Proof.Dev && st.Proof.Ino == ix.head.Proof.Ino {
				applied[k] = true // another process read the same log as far or further meanwhile
				continue
			}
			if u, ok := ix.updateFor(st, has); ok {
				ups, upK = append(ups, u), append(upK, k)
			}
		}
		for from := 0; from < len(ups); from += searchBatch {
			to := min(from+searchBatch, len(ups))
			ok, err := db.Apply(ctx, ups[from:to], wait)
			if err != nil {
				return err
			}
			for j, k := range upK[from:to] {
				applied[k] = ok[j]
			}
		}
		var ids []session.SessionID
		for k, ix := range reads {
			if !applied[k] {
				ids = append(ids, ix.head.ID)
			}
		}
		if len(ids) == 0 || round == searchRebases {
			return nil
		}
		var err error
		if states, err = db.StatesOf(ctx, ids); err != nil {
			return err
		}
	}
}

// searchBatch is how many sessions one transaction of a catch-up takes.
const searchBatch = 32

// Reindex implements searchhost.Index (the store's ReindexSearch): it
// rebuilds the search index from the logs, as a new file:
// every session is indexed into a new index beside the old one, which
// then replaces it (so nothing of the old file survives: rows, triggers,
// damage). Searches meanwhile stay correct (they use the old index, and
// index what they find missing). Whatever is at the index's paths that
// the store never puts there (a directory, a symlink, a FIFO) is
// replaced; an index this user may not read or write is a permission
// error, and is left alone. It reports what it indexed.
func (x *Index) Reindex(ctx context.Context) (sessionstore.SearchIndexReport, error) {
	if x.closing.Load() {
		return sessionstore.SearchIndexReport{}, sessionstore.ErrClosed
	}
	x.flushSearch(ctx, searchWait)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return sessionstore.SearchIndexReport{}, sessionstore.ErrClosed
	}
	if err := x.fixSearchDir(); err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	if fi, err := x.fs.Lstat(x.file); err == nil && fi.Mode().IsRegular() {
		// Another user's index is theirs to remove, not ours to replace.
		if err := searchdb.Accessible(x.h.Abs(x.file)); errors.Is(err, fs.ErrPermission) {
			return sessionstore.SearchIndexReport{}, layout.OpErr("search index", "", fmt.Errorf("%w (remove %s to rebuild it)", err, x.h.Abs(x.dir)))
		}
	}
	db, name, err := x.newSearchIndex(ctx)
	if err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	cu, err := x.catchUpLocked(ctx, db, true, searchWait)
	if err == nil && (cu.mem != nil || len(cu.pending) > 0) {
		err = layout.OpErr("search index", "", errors.New("some sessions could not be written to the new index"))
	}
	if err != nil {
		x.dropSearchIndex(db, name)
		return sessionstore.SearchIndexReport{}, err
	}
	if err := x.finishSearchIndex(ctx, db, name); err != nil {
		x.dropSearchIndex(nil, name)
		return sessionstore.SearchIndexReport{}, err
	}
	x.closeSearchLocked()
	if _, err := x.putSearchIndex(ctx, name, func(fs.FileInfo, error) bool { return true }); err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	return sessionstore.SearchIndexReport{Sessions: cu.indexed, Unreadable: cu.unreadable}, nil
}
