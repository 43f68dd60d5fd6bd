package jsonlstore

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The watcher keeps a summary.Index current with the sessions on disk. It
// is driven by file system events (fsnotify) and checked by polling:
//
//   - It watches directories, never files: the root, where sessions appear
//     (a temporary directory renamed to the ID) and disappear (renamed to
//     a trash name), and each session directory, where the log is appended
//     to or replaced and summary.json is rewritten.
//   - An event only marks its session due; the summary is recomputed
//     debounce after the first event of a burst, from the state on disk
//     then. A session appended to 1,000 times a second is recomputed about
//     ten times a second, and the last change of a burst is always seen,
//     because an event after a recomputation schedules another. Polls keep
//     to the same pace (see check); only a List, which needs the index
//     current, recomputes due sessions at once.
//   - A recomputation first stats the log and does nothing when its
//     identity, size and modification time are those the summary was
//     computed from, so events that change nothing (lease files, the
//     summary rewrite that follows an append) cost one stat.
//   - Lost events are survived, not prevented: on fsnotify's overflow the
//     watcher rescans everything; a directory it cannot watch (the kernel's
//     limit on watches, or on macOS its own descriptor budget, see
//     watchBudget) is polled every PollInterval; and a full rescan runs
//     every rescanTicks poll intervals whatever happens, so the index
//     converges within two poll intervals even if every event is lost. A
//     scan stats each log — on a goroutine of its own for the periodic
//     ones, so that events and Lists are not held up — and recomputes only
//     what changed.
//   - Without an event source (a store on a simulated file system, or
//     fsnotify unavailable) the watcher rescans every PollInterval, as a
//     pure poller.
//
// One goroutine owns all of this state; List asks it, through syncReq,
// to confirm that the index is current before answering from it
// (watch_sync.go).

const (
	// debounce is the delay between a session's first event and the
	// recomputation of its summary, and the least time between two
	// recomputations of a session caused by events and polls.
	debounce = 100 * time.Millisecond
	// rescanTicks is how many poll intervals apart the safety-net full
	// rescans are: two, so that every change is seen within two poll
	// intervals even when no event arrives at all.
	rescanTicks = 2
	// syncWait bounds how long List waits for the watcher to confirm that
	// its index is current before it scans the disk itself.
	syncWait = time.Second
)

type watcher struct {
	s      *Store
	ix     *summary.Index
	src    eventSource // nil: poll only
	prefix string      // s.dir + "/": event names under it name store entries
	// budget is the number of directories the watcher may watch at once
	// (the root included); negative: no limit of its own.
	budget int
	// onRecompute, when set (tests), is called before each computation of
	// a session's summary.
	onRecompute func(session.SessionID)

	// The fields below belong to the watcher's goroutine.
	sessions    map[session.SessionID]*tracked
	polled      map[session.SessionID]*tracked // the sessions no watch covers
	watching    int                            // directories watched, the root included
	rootWatched bool                           // events announce new and deleted sessions
	limited     bool                           // an Add hit a kernel limit since the last full rescan
	limitLogged bool                           // the limit was reported and has not eased since
	listFailed  bool                           // the last rescan could not list the root (reported)
	due         []dueEntry
	seq         uint64 // numbers dueEntries
	timer       *time.Timer
	ticks       int
	barrier     string      // the outstanding barrier's token; "" when none
	barrierTick int         // the tick it was issued at
	waiters     []chan bool // Lists waiting for the outstanding barrier
	queued      []chan bool // Lists that asked after it was issued
	scanning    bool        // a periodic scan is running (see startScan)

	// mu guards sums and slot: the index's content as List reads it,
	// kept contiguous so that selecting a page streams through memory.
	// Only the watcher's goroutine writes them.
	mu   sync.RWMutex
	sums []summary.Summary
	slot map[session.SessionID]int // index in sums

	syncReq chan chan bool
	scanned chan scanResult // results of periodic scans
	scans   sync.WaitGroup  // periodic scan goroutines
	ready   chan struct{}   // closed when the initial scan is complete
	stop    chan struct{}
	done    chan struct{} // closed when the goroutine has returned
	once    sync.Once
}

// tracked is what the watcher knows of one session directory.
type tracked struct {
	dir      vfs.Identity // the directory watched (a recreated session is a new one)
	log      logState     // the log the current summary was computed from; zero: recompute
	watched  bool
	due      bool      // a recomputation is scheduled
	dueSeq   uint64    // the dueEntry that will run it
	computed time.Time // when the summary was last computed
}

// logState is what a stat tells of a log: a different value means the
// summary must be recomputed. The log of one identity only grows, except
// when recovery or repair truncates it, which also changes its
// modification time.
type logState struct {
	id    vfs.Identity
	size  int64
	mtime int64
}

type dueEntry struct {
	id  session.SessionID
	at  time.Time
	seq uint64
}

func newWatcher(s *Store, src eventSource) *watcher {
	w := &watcher{
		s: s, ix: summary.NewIndex(), src: src, prefix: s.dir + "/", budget: -1,
		sessions: map[session.SessionID]*tracked{},
		polled:   map[session.SessionID]*tracked{},
		slot:     map[session.SessionID]int{},
		syncReq:  make(chan chan bool),
		scanned:  make(chan scanResult),
		ready:    make(chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if src != nil {
		w.budget = watchBudget()
	}
	return w
}

// startWatcher starts the store's watcher unless it runs already; it
// returns nil when the store is closed.
func (s *Store) startWatcher() *watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil || s.closed.Load() {
		return s.watch
	}
	// fsnotify needs real directories: a store on a simulated file system
	// (no root) is polled.
	var src eventSource
	if s.root != nil {
		fsrc, err := newFsnotifySource()
		if err != nil {
			s.opts.Logger.Warn("jsonlstore: no file system events; polling", "err", err, "interval", s.opts.PollInterval)
		} else {
			src = fsrc
		}
	}
	s.watch = newWatcher(s, src)
	go s.watch.run()
	return s.watch
}

// Watch returns level-triggered changes: the current state of every
// session, then changes as the watcher sees them. It starts the store's
// watcher on first use and returns once its initial scan is complete.
func (s *Store) Watch(ctx context.Context) (<-chan summary.Change, error) {
	if s.closed.Load() {
		return nil, sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := s.startWatcher()
	if w == nil {
		return nil, sessionstore.ErrClosed
	}
	select {
	case <-w.ready:
	case <-w.done:
		return nil, sessionstore.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return w.ix.Subscribe(ctx).C(), nil
}

// close stops the goroutine, then the event source (whose own goroutine
// it waits for), then the index's subscriptions. It is idempotent.
func (w *watcher) close() {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		if w.src != nil {
			if err := w.src.Close(); err != nil {
				w.s.opts.Logger.Warn("jsonlstore: close file system events", "err", err)
			}
		}
		w.ix.Close()
	})
}

func (w *watcher) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *watcher) run() {
	defer close(w.done)
	defer w.scans.Wait()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.src != nil {
		events, errs = w.src.Events(), w.src.Errors()
		// The root is watched before it is listed, so that a session
		// created during the initial scan is either listed or announced.
		if w.addWatch(w.s.dir) {
			w.rootWatched = true
		} else {
			w.s.opts.Logger.Warn("jsonlstore: cannot watch the store root; polling", "dir", w.s.dir, "interval", w.s.opts.PollInterval)
		}
	}
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	defer w.timer.Stop()
	w.rescan()
	if w.stopping() {
		return
	}
	close(w.ready)

	tick := time.NewTicker(w.s.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			w.answer(w.waiters, false)
			w.answer(w.queued, false)
			return
		case ev, ok := <-events:
			if !ok {
				events, errs = nil, nil
				w.sourceLost()
				continue
			}
			w.event(ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.s.opts.Logger.Warn("jsonlstore: file system events", "err", err)
			}
			// Events may have been lost: look at everything. The rescan
			// starts after every waiting List asked, so it (with the due
			// sessions) answers them.
			w.rescan()
			if len(w.waiters)+len(w.queued) > 0 {
				w.flushDue()
			}
			w.answer(w.waiters, true)
			w.answer(w.queued, true)
			w.waiters, w.queued, w.barrier = nil, nil, ""
		case <-w.timer.C:
			w.fire()
		case <-tick.C:
			w.ticks++
			w.checkBarrier()
			if !w.rootWatched || w.ticks%rescanTicks == 0 {
				w.startScan(true)
			} else if len(w.polled) > 0 {
				w.startScan(false)
			}
		case res := <-w.scanned:
			w.scanning = false
			w.applyScan(res)
		case reply := <-w.syncReq:
			w.requestSync(reply)
		}
	}
}

// name returns the store entry (a session ID, or a leftover's name) and
// the path inside it that an event is about. ok is false for anything
// outside the root, and for the root itself.
func (w *watcher) name(path string) (entry, rest string, ok bool) {
	rel, ok := strings.CutPrefix(path, w.prefix)
	if !ok || rel == "" {
		return "", "", false
	}
	entry, rest, _ = strings.Cut(rel, "/")
	return entry, rest, true
}

func (w *watcher) event(ev fsnotify.Event) {
	if w.barrier != "" && ev.Name == w.barrier {
		w.barrierReached()
		return
	}
	entry, rest, ok := w.name(ev.Name)
	if !ok {
		return
	}
	id := session.SessionID(entry)
	if sessionstore.ValidateID(id) != nil {
		return // .tmp-*, .trash-*: not sessions (yet, any more)
	}
	if ignoredEntry(rest) {
		return
	}
	w.schedule(id)
}

// ignoredEntry reports whether a change to this path inside a session
// directory cannot change its summary: the lease files (lease.json and its
// temporary files are rewritten by every acquisition, release and
// heartbeat) and forensic copies.
func ignoredEntry(rest string) bool {
	return rest == fslease.LockFile || strings.HasPrefix(rest, fslease.RecordFile) ||
		rest == ForensicDir || strings.HasPrefix(rest, ForensicDir+"/")
}

// schedule marks session id due for a recomputation debounce from now,
// unless it is due already.
func (w *watcher) schedule(id session.SessionID) {
	t := w.track(id)
	if t.due {
		return
	}
	w.seq++
	t.due, t.dueSeq = true, w.seq
	w.due = append(w.due, dueEntry{id: id, at: time.Now().Add(debounce), seq: w.seq})
	if len(w.due) == 1 {
		w.timer.Reset(debounce)
	}
}

// fire recomputes the sessions whose time has come. Entries are in
// deadline order (they all wait the same delay); an entry whose session
// was recomputed meanwhile (by a List) is stale and skipped.
func (w *watcher) fire() {
	now := time.Now()
	n := 0
	for n < len(w.due) && !w.due[n].at.After(now) {
		e := w.due[n]
		n++
		if t := w.sessions[e.id]; t != nil && t.due && t.dueSeq == e.seq {
			t.due = false
			w.refresh(e.id)
		}
	}
	w.due = append(w.due[:0], w.due[n:]...)
	if len(w.due) > 0 {
		w.timer.Reset(w.due[0].at.Sub(now))
	}
}

// flushDue recomputes every due session now.
func (w *watcher) flushDue() {
	for _, e := range w.due {
		if t := w.sessions[e.id]; t != nil && t.due && t.dueSeq == e.seq {
			t.due = false
			w.refresh(e.id)
		}
	}
}

// track returns what the watcher knows of session id, making a new entry
// (not watched yet) if needed.
func (w *watcher) track(id session.SessionID) *tracked {
	t := w.sessions[id]
	if t == nil {
		t = &tracked{}
		w.sessions[id] = t
		w.polled[id] = t
	}
	return t
}

// refresh brings the index up to date with session id on disk: it
// recomputes the summary if the log changed since it was last computed,
// marks the session unreadable if it cannot be read (damage.go), and
// forgets it if its directory is gone or holds no session.
func (w *watcher) refresh(id session.SessionID) {
	t := w.sessions[id]
	fi, ferr := w.s.statLog(id)
	if errors.Is(ferr, sessionstore.ErrNotFound) {
		w.forget(id)
		return
	}
	var st logState // zero for a log that is not there: recomputed at every look
	if ferr == nil {
		st = logState{id: vfs.IdentityOf(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
		if t != nil && t.log == st {
			return
		}
	}
	dfi, err := w.s.fs.Lstat(sessionDir(id))
	if err != nil || !dfi.IsDir() {
		w.forget(id)
		return
	}
	t = w.track(id)
	if dir := vfs.IdentityOf(dfi); dir != t.dir {
		// A new directory under this name (deleted and created again):
		// a watch on the old one says nothing about it.
		if t.watched {
			w.unwatchSession(id, t)
		}
		t.dir = dir
	}
	// Watch before reading: a change after this point sends an event, one
	// before it is in what summaryOf reads.
	w.watchSession(id, t)
	if ferr != nil {
		t.log = logState{}
		w.unreadable(id, ferr)
		return
	}
	t.computed = time.Now()
	if w.onRecompute != nil {
		w.onRecompute(id)
	}
	sum, err := w.s.summaryOf(context.Background(), id)
	switch {
	case err == nil:
		t.log = st
		w.put(sum)
	case errors.Is(err, sessionstore.ErrNotFound):
		w.forget(id)
	case endsStoreWide(err):
		// Closing: nothing to report.
		t.log = logState{}
	default:
		// Reported, as List does (corruption, a newer program's records,
		// a permission error), and looked at again when the log changes —
		// or, for a permission error, at every poll: a chmod changes
		// nothing that logState records.
		t.log = st
		if errors.Is(err, fs.ErrPermission) {
			t.log = logState{}
		}
		w.unreadable(id, err)
	}
}

// unreadable marks session id unreadable because of err: it leaves the
// listing (without a deletion event) and is reported by List and Watch.
func (w *watcher) unreadable(id session.SessionID, err error) {
	w.dropSum(id)
	w.ix.PutUnreadable(summary.UnreadableOf(id, err))
}

// put publishes sum. The index ignores a lower revision than the one it
// holds (a stale writer), but here a lower revision is the truth on disk —
// a new session under a deleted one's name, or a repaired log — so the old
// summary is deleted first.
func (w *watcher) put(sum summary.Summary) {
	w.mu.Lock()
	i, had := w.slot[sum.ID]
	var oldRev uint64
	if had {
		oldRev = w.sums[i].Revision
		w.sums[i] = sum
	} else {
		w.slot[sum.ID] = len(w.sums)
		w.sums = append(w.sums, sum)
	}
	w.mu.Unlock()
	if had && sum.Revision < oldRev {
		w.ix.Delete(sum.ID)
	}
	w.ix.Put(sum)
}

// drop removes session id's summary, keeping what the watcher tracks.
func (w *watcher) drop(id session.SessionID) {
	w.dropSum(id)
	w.ix.Delete(id)
}

// dropSum removes session id's summary from what List reads.
func (w *watcher) dropSum(id session.SessionID) {
	w.mu.Lock()
	i, ok := w.slot[id]
	if ok {
		last := len(w.sums) - 1
		w.sums[i] = w.sums[last]
		w.slot[w.sums[i].ID] = i
		w.sums[last] = summary.Summary{}
		w.sums = w.sums[:last]
		delete(w.slot, id)
	}
	w.mu.Unlock()
}

// forget removes session id altogether: its directory is gone.
func (w *watcher) forget(id session.SessionID) {
	if t := w.sessions[id]; t != nil {
		if t.watched {
			w.unwatchSession(id, t)
		}
		delete(w.sessions, id)
		delete(w.polled, id)
	}
	w.drop(id)
}
