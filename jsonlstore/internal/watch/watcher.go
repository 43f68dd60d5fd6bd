package watch

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const (
	// debounce is the delay between a session's first event and the
	// recomputation of its summary, and the least time between two
	// recomputations of a session caused by events and polls.
	debounce = 100 * time.Millisecond
	// rescanTicks is how many poll intervals apart the safety-net full
	// rescans are: two, so that every change is seen within two poll
	// intervals even when no event arrives at all.
	rescanTicks = 2
	// syncWait bounds how long Current waits for the watcher to confirm
	// that its index is current.
	syncWait = time.Second
)

// Disk is the store as the watcher reads it: its sessions, each a
// directory under the root holding a log. The watcher calls it from its
// own goroutine and, for periodic scans, from another at the same time, so
// its methods must be safe for concurrent use.
type Disk interface {
	// IDs lists the sessions.
	IDs() ([]session.SessionID, error)
	// StatDir describes session id's directory (not following a link);
	// a new directory under the same name has a new identity.
	StatDir(id session.SessionID) (fs.FileInfo, error)
	// StatLog describes session id's log, a regular file. An error
	// wrapping sessionstore.ErrNotFound means that there is no such
	// session (any more); another error, that the session exists but
	// cannot be read (it is then reported, see summary.Unreadable).
	StatLog(id session.SessionID) (fs.FileInfo, error)
	// Summary computes session id's summary (without its lease status).
	// Errors: sessionstore.ErrNotFound as for StatLog, sessionstore.ErrClosed
	// once the store is closing, anything else for a session that cannot
	// be read.
	Summary(ctx context.Context, id session.SessionID) (summary.Summary, error)
	// StatLease describes the file that every write of session id's lease
	// record replaces (lease.json): another identity, size or modification
	// time means that the lease may have changed. An error counts as no
	// file.
	StatLease(id session.SessionID) (fs.FileInfo, error)
	// Lease reports session id's lease status, computed now, modifying
	// nothing (Store.Lease). Errors: sessionstore.ErrClosed once the store
	// is closing; anything else leaves the status unknown.
	Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error)
	// Affects says what a change to the entry at rest, a path inside a
	// session directory, may change.
	Affects(rest string) Effect
}

// Effect is what a change to an entry of a session directory may change.
type Effect int

// Effects.
const (
	// AffectsNothing: the entry is of no interest (a forensic copy, a
	// temporary file).
	AffectsNothing Effect = iota
	// AffectsSummary: the entry may change the session's summary (its
	// log, its summary cache, the directory itself).
	AffectsSummary
	// AffectsLease: the entry may change the session's lease status (the
	// lease record, replaced by every acquisition, heartbeat and release;
	// the lock file, when it is replaced). A change of its times alone
	// (a holder's touch) affects nothing.
	AffectsLease
)

// EntryEffect is what a change to the entry at rest, a path inside a
// session directory of a directory store, may change: lease.json
// (replaced by every acquisition, heartbeat and release) and lease.lock
// (replaced only by tampering or a restore) the lease; neither the
// temporary files lease.json is written through nor forensic copies;
// everything else the summary. It is the store's Disk.Affects.
func EntryEffect(rest string) Effect {
	switch {
	case rest == fslease.RecordFile || rest == fslease.LockFile:
		return AffectsLease
	case strings.HasPrefix(rest, fslease.RecordFile), rest == layout.ForensicDir, strings.HasPrefix(rest, layout.ForensicDir+"/"):
		return AffectsNothing
	}
	return AffectsSummary
}

// Options configure a Watcher.
type Options struct {
	// Dir is the absolute path of the store's root: the events of Source
	// name entries under it.
	Dir string
	// Source delivers file system events (NewSource); nil means none, and
	// the watcher polls.
	Source EventSource
	// PollInterval is how often the watcher polls what events do not
	// cover; it must be positive.
	PollInterval time.Duration
	// Budget bounds the directories watched at once, the root included: 0
	// means the platform's own (watchBudget), negative no bound.
	Budget int
	// Logger receives notable events; nil means none.
	Logger *slog.Logger
}

// Watcher keeps a summary.Index current with the sessions of a Disk. See
// the package documentation for how.
type Watcher struct {
	disk   Disk
	ix     *summary.Index
	src    EventSource // nil: poll only
	prefix string      // Options.Dir + "/": event names under it name store entries
	poll   time.Duration
	logger *slog.Logger
	// budget is the number of directories the watcher may watch at once
	// (the root included); negative: no limit of its own.
	budget int

	// The fields below belong to the watcher's goroutine.
	sessions    map[session.SessionID]*tracked
	polled      map[session.SessionID]*tracked // the sessions no watch covers
	held        map[session.SessionID]struct{} // the sessions whose lease was last seen held
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
	waiters     []chan bool // Currents waiting for the outstanding barrier
	queued      []chan bool // Currents that asked after it was issued
	scanning    bool        // a periodic scan is running (see startScan)

	// mu guards sums and slot: the index's content as Page reads it, kept
	// contiguous so that selecting a page streams through memory. Only the
	// watcher's goroutine writes them.
	mu   sync.RWMutex
	sums []summary.Summary
	slot map[session.SessionID]int // index in sums
	// leaseFiles[i] is the state of sums[i]'s lease record when its lease
	// status was last looked at (zero: not known), so that a listing can
	// tell with a stat whether the status may have changed since (Page).
	leaseFiles []vfs.State
	// gen counts the changes of sums (under mu), so that a page selected
	// once is reused until they change (lastPage).
	gen      uint64
	lastPage struct {
		sync.Mutex
		key     string
		gen     uint64
		entries []int
		next    string
		ok      bool
	}

	syncReq chan chan bool
	scanned chan scanResult // results of periodic scans
	scans   sync.WaitGroup  // periodic scan goroutines
	ready   chan struct{}   // closed when the initial scan is complete
	stop    chan struct{}
	done    chan struct{} // closed when the goroutine has returned
	once    sync.Once
}

// tracked is what the watcher knows of one session directory. A log's
// State changes when anything is appended to it: the log of one identity
// only grows, except when recovery or repair truncates it, which also moves
// its modification time. The lease record is replaced at every write.
type tracked struct {
	dir      vfs.Identity // the directory watched (a recreated session is a new one)
	log      vfs.State    // the log the current summary was computed from; zero: recompute
	watched  bool
	due      bool      // a recomputation is scheduled
	dueSeq   uint64    // the dueEntry that will run it
	computed time.Time // when the summary or the lease was last looked at

	// The lease (lease.go).
	lease     summary.LeaseStatus // the status published with the summary
	leaseFile vfs.State           // the lease record when the lease was last looked at
	leaseDue  bool                // an event or a poll says the lease may have changed
}

type dueEntry struct {
	id  session.SessionID
	at  time.Time
	seq uint64
}

// Start starts a watcher of d and returns it; its initial scan runs in
// the background (Subscribe waits for it). Close stops it.
func Start(d Disk, opts Options) *Watcher {
	w := newWatcher(d, opts)
	go w.run()
	return w
}

func newWatcher(d Disk, opts Options) *Watcher {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{
		disk: d, ix: summary.NewIndex(), src: opts.Source, prefix: opts.Dir + "/",
		poll: opts.PollInterval, logger: logger, budget: -1,
		sessions: map[session.SessionID]*tracked{},
		polled:   map[session.SessionID]*tracked{},
		held:     map[session.SessionID]struct{}{},
		slot:     map[session.SessionID]int{},
		syncReq:  make(chan chan bool),
		scanned:  make(chan scanResult),
		ready:    make(chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	switch {
	case opts.Budget != 0:
		w.budget = opts.Budget
	case w.src != nil:
		w.budget = watchBudget()
	}
	return w
}

// Subscribe waits until the initial scan is complete and returns a
// channel of level-triggered changes: first the current state of every
// session, then changes as the watcher sees them (summary.Index.Subscribe).
// The channel is closed when ctx is done or the watcher is closed.
// Errors: sessionstore.ErrClosed when the watcher is closed, ctx's error.
func (w *Watcher) Subscribe(ctx context.Context) (<-chan summary.Change, error) {
	if w.stopping() {
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

// Close stops the goroutine, then the event source (whose own goroutine
// it waits for), then the index's subscriptions. It is idempotent.
func (w *Watcher) Close() {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		if w.src != nil {
			if err := w.src.Close(); err != nil {
				w.logger.Warn("jsonlstore: close file system events", "err", err)
			}
		}
		w.ix.Close()
	})
}

func (w *Watcher) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *Watcher) run() {
	defer close(w.done)
	defer w.scans.Wait()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.src != nil {
		events, errs = w.src.Events(), w.src.Errors()
		// The root is watched before it is listed, so that a session
		// created during the initial scan is either listed or announced.
		if w.addWatch(strings.TrimSuffix(w.prefix, "/")) {
			w.rootWatched = true
		} else {
			w.logger.Warn("jsonlstore: cannot watch the store root; polling", "dir", strings.TrimSuffix(w.prefix, "/"), "interval", w.poll)
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

	tick := time.NewTicker(w.poll)
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
				w.logger.Warn("jsonlstore: file system events", "err", err)
			}
			// Events may have been lost: look at everything. The rescan
			// starts after every waiting Current asked, so it (with the
			// due sessions) answers them.
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
			} else if len(w.polled) > 0 || w.anyHeld() {
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
func (w *Watcher) name(path string) (entry, rest string, ok bool) {
	rel, ok := strings.CutPrefix(path, w.prefix)
	if !ok || rel == "" {
		return "", "", false
	}
	entry, rest, _ = strings.Cut(rel, "/")
	return entry, rest, true
}

func (w *Watcher) event(ev fsnotify.Event) {
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
	if rest != "" {
		switch w.disk.Affects(rest) {
		case AffectsNothing:
			return
		case AffectsLease:
			if ev.Op == fsnotify.Chmod {
				return // a holder's touch: its appends are events of their own
			}
			w.track(id).leaseDue = true
		}
	}
	w.schedule(id)
}

// schedule marks session id due for a recomputation debounce from now,
// unless it is due already.
func (w *Watcher) schedule(id session.SessionID) {
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
// was recomputed meanwhile (for a Current) is stale and skipped.
func (w *Watcher) fire() {
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
func (w *Watcher) flushDue() {
	for _, e := range w.due {
		if t := w.sessions[e.id]; t != nil && t.due && t.dueSeq == e.seq {
			t.due = false
			w.refresh(e.id)
		}
	}
}

// track returns what the watcher knows of session id, making a new entry
// (not watched yet) if needed.
func (w *Watcher) track(id session.SessionID) *tracked {
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
// and looks at the lease then or when the lease may have changed (an
// event, a new lease record); it marks the session unreadable if it cannot
// be read, and forgets it if its directory is gone or holds no session.
func (w *Watcher) refresh(id session.SessionID) {
	t := w.sessions[id]
	fi, ferr := w.disk.StatLog(id)
	if errors.Is(ferr, sessionstore.ErrNotFound) {
		w.forget(id)
		return
	}
	var st vfs.State // zero for a log that is not there: recomputed at every look
	logSame := false
	if ferr == nil {
		st = vfs.StateOf(fi)
		if t != nil && t.log == st {
			if lf := w.leaseFileOf(id); lf != t.leaseFile {
				t.leaseDue = true
			}
			if !t.leaseDue {
				return
			}
			logSame = true
		}
	}
	dfi, err := w.disk.StatDir(id)
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
	// before it is in what Summary reads.
	w.watchSession(id, t)
	if ferr != nil {
		t.log = vfs.State{}
		w.unreadable(id, ferr)
		return
	}
	t.computed = time.Now()
	if logSame {
		w.refreshLease(id, t)
		return
	}
	sum, err := w.disk.Summary(context.Background(), id)
	switch {
	case err == nil:
		t.log = st
		// Looked at with every new summary, so that a change carries the
		// holder's latest sign of life (an append touches the lease).
		sum.Lease = w.lookLease(id, t)
		w.put(sum)
	case errors.Is(err, sessionstore.ErrNotFound):
		w.forget(id)
	case errors.Is(err, sessionstore.ErrClosed):
		// Closing: nothing to report.
		t.log = vfs.State{}
	default:
		// Reported, as List does (corruption, a newer program's records,
		// a permission error), and looked at again when the log changes —
		// or, for a permission error, at every poll: a chmod changes
		// nothing that vfs.State records.
		t.log = st
		if errors.Is(err, fs.ErrPermission) {
			t.log = vfs.State{}
		}
		w.unreadable(id, err)
	}
}

// unreadable marks session id unreadable because of err: it leaves the
// listing (without a deletion event) and is reported by Page and the
// subscriptions.
func (w *Watcher) unreadable(id session.SessionID, err error) {
	w.dropSum(id)
	w.ix.PutUnreadable(summary.UnreadableOf(id, err))
}

// put publishes sum. The index ignores a lower revision than the one it
// holds (a stale writer), but here a lower revision is the truth on disk —
// a new session under a deleted one's name, or a repaired log — so the old
// summary is deleted first.
func (w *Watcher) put(sum summary.Summary) {
	var lf vfs.State
	if t := w.sessions[sum.ID]; t != nil && summary.SameLease(t.lease, sum.Lease) {
		lf = t.leaseFile
	}
	w.mu.Lock()
	i, had := w.slot[sum.ID]
	var oldRev uint64
	if had {
		oldRev = w.sums[i].Revision
		w.sums[i], w.leaseFiles[i] = sum, lf
	} else {
		w.slot[sum.ID] = len(w.sums)
		w.sums = append(w.sums, sum)
		w.leaseFiles = append(w.leaseFiles, lf)
	}
	w.gen++
	w.mu.Unlock()
	if had && sum.Revision < oldRev {
		w.ix.Delete(sum.ID)
	}
	w.ix.Put(sum)
}

// drop removes session id's summary, keeping what the watcher tracks.
func (w *Watcher) drop(id session.SessionID) {
	w.dropSum(id)
	w.ix.Delete(id)
}

// dropSum removes session id's summary from what Page reads.
func (w *Watcher) dropSum(id session.SessionID) {
	w.mu.Lock()
	i, ok := w.slot[id]
	if ok {
		last := len(w.sums) - 1
		w.sums[i], w.leaseFiles[i] = w.sums[last], w.leaseFiles[last]
		w.slot[w.sums[i].ID] = i
		w.sums[last] = summary.Summary{}
		w.sums, w.leaseFiles = w.sums[:last], w.leaseFiles[:last]
		delete(w.slot, id)
		w.gen++
	}
	w.mu.Unlock()
}

// forget removes session id altogether: its directory is gone.
func (w *Watcher) forget(id session.SessionID) {
	if t := w.sessions[id]; t != nil {
		if t.watched {
			w.unwatchSession(id, t)
		}
		delete(w.sessions, id)
		delete(w.polled, id)
		delete(w.held, id)
	}
	w.drop(id)
}
