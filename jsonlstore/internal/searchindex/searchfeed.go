package searchindex

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Writers feed the search index without waiting for it: an append
// queues what it added (the new messages, shared with the caller's
// snapshot: a message never changes once appended) and returns; the
// queue is written a little later (searchFlushDelay), in one transaction
// for every append of the store meanwhile, so that a burst of appends
// costs one index write. Writers take turns at the index through its
// writer lock (.search/writer: each waits in the kernel and starts the
// moment the last one ends); a write that waits searchFeedWait for it in
// vain is tried again searchFlushDelay later (searchRetries times), then
// dropped:
// the sessions it was about are stale in the index, and the next search
// reads them from their logs. Closing the store writes what is queued.

const (
	// searchFlushDelay is how long an append's index update waits for
	// others to share its transaction.
	searchFlushDelay = 100 * time.Millisecond
	// searchRetries is how often a busy index is tried again (each try
	// having waited searchFeedWait: no further back-off).
	searchRetries = 6
	// searchQueueBytes bounds the text queued: past it, what is queued
	// is dropped (and read from the logs later).
	searchQueueBytes = 32 << 20
	// searchWait is how long a search, a close or a rebuild waits for
	// another process's write to the index.
	searchWait = searchdb.Wait(5 * time.Second)
	// searchFeedWait is how long the queue's timer write waits for
	// another process's write to the index.
	searchFeedWait = searchdb.Wait(time.Second)
)

// searchFeed is the queue of index updates.
type searchFeed struct {
	pending []searchEvent
	bytes   int
	timer   *time.Timer
	tries   int
	// flushing is set while the timer's write runs: one at a time, so
	// that what is queued while it waits for the index joins the next.
	flushing bool
}

// searchEvent is one queued update: a session deleted, one to read from
// its log, or the messages an append added.
type searchEvent struct {
	id      session.SessionID
	deleted bool
	catchUp bool
	u       searchdb.Update
	msgs    []session.Message // the new messages, first being message u.FromMessages
}

// feed is a writer's feed (searchhost.Feed): what the writer gave the
// index last, the revision and its messages. known is false until the
// writer's first append (or, for a writer that created its session with
// one revision, true from the start: the index holds nothing of it).
// The writer calls it under its own lock.
type feed struct {
	x     *Index
	id    session.SessionID
	known bool
	rev   uint64
	msgs  sessnap.Messages
}

// Feed implements searchhost.Index.
func (x *Index) Feed(id session.SessionID, created bool) searchhost.Feed {
	return &feed{x: x, id: id, known: created}
}

// Appended queues the index update of revision rec of the writer's
// session, whose snapshot is snap, just made durable; fi is the log's
// state ending with it, nil when unknown. It costs no I/O: the docs are
// made when the queue is written.
func (m *feed) Appended(rec *record.Rec, snap *sessnap.Snapshot, fi fs.FileInfo) {
	ev := searchEvent{id: m.id}
	if m.known && m.rev+1 == rec.Rev && continues(m.msgs, snap.Messages) {
		if fi != nil {
			ev.u = searchdb.Update{ID: m.id, FromRev: m.rev, FromMessages: len(m.msgs), Rev: rec.Rev,
				Messages: len(snap.Messages), Extend: true, Title: snap.Title, TitleRev: rec.Rev, Updated: rec.Time,
				Project: snap.Workspace.Project, Labels: snap.Labels, Proof: proofOf(fi)}
			ev.msgs = snap.Messages[len(m.msgs):]
		} else {
			ev.catchUp = true
		}
	} else {
		ev.catchUp = true // the writer does not know what the index holds
	}
	m.known, m.rev, m.msgs = true, rec.Rev, snap.Messages
	m.x.queueSearch(ev)
}

// continues reports whether next begins with prev's messages, known for
// certain and cheaply: the same memory (sessnap.Of shares a growing
// session's messages), or, after the session's slice grew into a new
// array, messages whose parts are the same memory (a message never
// changes once appended). A false answer may be wrong: the index is
// then brought up to date from the log.
func continues(prev, next sessnap.Messages) bool {
	if len(next) < len(prev) {
		return false
	}
	if len(prev) == 0 || &prev[0] == &next[0] {
		return true
	}
	for i := range prev {
		a, b := &prev[i], &next[i]
		if a.Role != b.Role || len(a.Parts) != len(b.Parts) || len(a.Parts) > 0 && &a.Parts[0] != &b.Parts[0] {
			return false
		}
	}
	return true
}

// Deleted implements searchhost.Index.
func (x *Index) Deleted(id session.SessionID) {
	x.queueSearch(searchEvent{id: id, deleted: true})
}

func (x *Index) queueSearch(ev searchEvent) {
	f := &x.feed
	x.feedMu.Lock()
	defer x.feedMu.Unlock()
	for i := range ev.msgs {
		for j := range ev.msgs[i].Parts {
			p := &ev.msgs[i].Parts[j]
			f.bytes += len(p.Text) + len(p.Output) + len(p.Input)
		}
	}
	f.pending = append(f.pending, ev)
	if f.bytes > searchQueueBytes {
		// Too much text queued: keep only which sessions changed, to be
		// read from their logs.
		seen := map[session.SessionID]bool{}
		kept := f.pending[:0]
		for _, e := range f.pending {
			if e.deleted {
				kept = append(kept, e)
				continue
			}
			if !seen[e.id] {
				seen[e.id] = true
				kept = append(kept, searchEvent{id: e.id, catchUp: true})
			}
		}
		f.pending, f.bytes = kept, 0
	}
	if f.timer == nil && !f.flushing && !x.closing.Load() {
		f.timer = time.AfterFunc(searchFlushDelay, x.feedFlush)
	}
}

// feedFlush is the timer's write of the queue. Only one runs at a time:
// appends made while it waits for another process's write to the index
// are written by the next, in one transaction, so that a busy index
// gets fewer, larger writes instead of a line of small ones (each
// waiting for the index, and each holding it while others wait).
func (x *Index) feedFlush() {
	f := &x.feed
	x.feedMu.Lock()
	// The timer that called this has fired: the next flush needs a new
	// one (a flush that finds the index busy before it takes the queue
	// arms it in retrySearch; the running write arms the next).
	f.timer = nil
	if f.flushing {
		x.feedMu.Unlock()
		return
	}
	f.flushing = true
	x.feedMu.Unlock()
	x.flushSearch(context.Background(), searchFeedWait)
	x.feedMu.Lock()
	defer x.feedMu.Unlock()
	f.flushing = false
	if len(f.pending) > 0 && f.timer == nil && !x.closing.Load() {
		f.timer = time.AfterFunc(searchFlushDelay, x.feedFlush)
	}
}

// flushSearch writes the queued updates to the index, waiting for
// another process's write as wait says. Sessions whose update does not
// build on what the index holds are read from their logs. It takes the
// writer's turn (.search/writer) before it takes the queue, so that what
// is appended while it waits for its turn joins this write, and holds
// it across the write's transactions.
func (x *Index) flushSearch(ctx context.Context, wait searchdb.Wait) {
	if x.queueEmpty() {
		return
	}
	ctx, release, err := x.takeTurn(ctx, wait)
	if err != nil {
		x.retrySearch(nil)
		return
	}
	defer release()
	events := x.takeQueue()
	if len(events) == 0 {
		return
	}
	x.stats.feedWrites.Add(1)
	err = x.writeSearch(ctx, events, wait)
	if !errors.Is(err, searchdb.ErrBusy) {
		if err != nil && !errors.Is(err, searchdb.ErrMissing) && !x.closing.Load() {
			x.log.Warn("jsonlstore: search index not updated", "err", err)
		}
		f := &x.feed
		x.feedMu.Lock()
		f.tries = 0
		x.feedMu.Unlock()
		return
	}
	x.retrySearch(events)
}

// retrySearch puts events, which found the index busy, back before any
// queued since, and has the queue tried again searchFlushDelay later
// (the write already waited); after searchRetries, what is queued is
// dropped (the next search reads it from the logs).
func (x *Index) retrySearch(events []searchEvent) {
	f := &x.feed
	x.feedMu.Lock()
	defer x.feedMu.Unlock()
	f.tries++
	if f.tries > searchRetries || x.closing.Load() {
		f.tries = 0
		f.pending, f.bytes = nil, 0
		return
	}
	f.pending = append(events, f.pending...)
	if f.timer == nil {
		f.timer = time.AfterFunc(searchFlushDelay, x.feedFlush)
	}
}

// takeTurn takes the writer lock for a write of the queue, waiting as
// wait says, and returns the context that tells the write's
// transactions it is held (they do not take it again). Its error is
// searchdb.ErrBusy or the context's; any other (no .search yet, junk at
// the lock's path) is left for the write to find and report: release is
// then a no-op.
func (x *Index) takeTurn(ctx context.Context, wait searchdb.Wait) (context.Context, func(), error) {
	release, err := x.lockWriter(ctx, wait)
	switch {
	case err == nil:
		return context.WithValue(ctx, writerHeld{}, x), release, nil
	case errors.Is(err, searchdb.ErrBusy) || ctx.Err() != nil:
		return ctx, nil, err
	}
	return ctx, func() {}, nil
}

// writerHeld keys the context of a write made while this Index holds
// the writer lock (flushSearch): lockWriter then does not take it again.
type writerHeld struct{}

// writeSearch applies events to the index in one transaction, then reads
// from their logs the sessions whose update did not apply.
func (x *Index) writeSearch(ctx context.Context, events []searchEvent, wait searchdb.Wait) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	db, err := x.openSearchLocked(ctx, false, wait)
	if err != nil {
		return err // missing: the first search builds it; busy: tried again later
	}
	ups := make([]searchdb.Update, 0, len(events))
	var behind []session.SessionID
	// A session read from its log is read as it is at the end: its
	// updates queued after the one that needs the read are in it.
	reread := map[session.SessionID]bool{}
	for i := range events {
		ev := &events[i]
		switch {
		case ev.deleted:
			ups = append(ups, searchdb.Update{ID: ev.id, Delete: true})
			delete(reread, ev.id)
		case reread[ev.id]:
		case ev.catchUp:
			behind = append(behind, ev.id)
			reread[ev.id] = true
		default:
			u, ok := ev.update()
			if !ok {
				behind = append(behind, ev.id) // content not in memory: read it from the log
				reread[ev.id] = true
				continue
			}
			ups = append(ups, u)
		}
	}
	applied, err := db.Apply(ctx, ups, wait)
	if err != nil {
		return err
	}
	for i, ok := range applied {
		if !ok {
			behind = append(behind, ups[i].ID)
		}
	}
	return x.refreshLocked(ctx, db, behind, wait)
}

// update is the event's update with the docs of its messages; ok is
// false when some of their content is not in memory.
func (ev *searchEvent) update() (searchdb.Update, bool) {
	u := ev.u
	for j := range ev.msgs {
		doc, ok := fulltext.MessageDoc(&ev.msgs[j])
		if !ok {
			return u, false
		}
		u.Add = append(u.Add, searchdb.Message{Index: u.FromMessages + j, Rev: u.Rev, Doc: doc})
	}
	return u, true
}

// refreshLocked brings the rows of sessions ids up to date from their
// logs (each once): from what was appended since a row's revision where
// it can (readIndexed), and not at all where another process has brought
// a row further meanwhile.
func (x *Index) refreshLocked(ctx context.Context, db *searchdb.DB, ids []session.SessionID, wait searchdb.Wait) error {
	if len(ids) == 0 || x.closing.Load() {
		return nil
	}
	seen := map[session.SessionID]bool{}
	var uniq []session.SessionID
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	states, err := db.StatesOf(ctx, uniq)
	if err != nil {
		return err
	}
	var reads []*indexed
	for _, id := range uniq {
		var hint *searchdb.State
		if st, ok := states[id]; ok {
			hint = &st
		}
		ix, err := x.readIndexed(ctx, id, hint)
		if err != nil {
			continue // deleted, unreadable: the next search sees to it
		}
		reads = append(reads, ix)
	}
	if len(reads) == 0 {
		return nil
	}
	return x.applyLocked(ctx, db, reads, states, make([]bool, len(reads)), wait)
}

// Close implements searchhost.Index: it writes what is queued (waiting
// a little for another process) and closes the index.
func (x *Index) Close() {
	x.closing.Store(true)
	x.flushSearch(context.Background(), searchWait)
	x.mu.Lock()
	x.closeSearchLocked()
	x.closed = true
	x.mu.Unlock()
}

// Flush implements searchhost.Index (the store's FlushSearch): it writes
// the search index updates that appends queued, now,
// waiting up to a few seconds for another process's write to the index;
// it returns what kept it from writing them (they are then left to the
// next search). Appends need not call it: the store writes its queue
// soon after each append, and when it is closed.
func (x *Index) Flush(ctx context.Context) error {
	if x.closing.Load() {
		return sessionstore.ErrClosed
	}
	if x.queueEmpty() {
		return nil
	}
	ctx, release, err := x.takeTurn(ctx, searchWait)
	if err != nil {
		return err
	}
	defer release()
	events := x.takeQueue()
	if len(events) == 0 {
		return nil
	}
	err = x.writeSearch(ctx, events, searchWait)
	if errors.Is(err, searchdb.ErrMissing) {
		return nil // no index: the first search builds it
	}
	return err
}

// queueEmpty reports whether nothing is queued.
func (x *Index) queueEmpty() bool {
	x.feedMu.Lock()
	defer x.feedMu.Unlock()
	return len(x.feed.pending) == 0
}

// takeQueue empties the queue and returns what it held.
func (x *Index) takeQueue() []searchEvent {
	x.feedMu.Lock()
	defer x.feedMu.Unlock()
	f := &x.feed
	events := f.pending
	f.pending, f.bytes = nil, 0
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	return events
}
